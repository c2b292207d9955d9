package stack

import (
	"context"
	"fmt"
	"os"

	runtimeclient "sigs.k8s.io/cluster-api/exp/runtime/client"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/runtimehooks"
	"github.com/capk3s/capk3s/test/envtest"
)

// runtimeHooksClient is the one Runtime SDK client of the stack, shared by CAPI's
// ExtensionConfig, Machine and MachineDeployment reconcilers and capk3s's control
// plane, as one registry per process is in CAPI's managers. It presents the client
// certificate in certFile and keyFile, if given, as CAPI's managers do with
// --runtime-extension-client-cert-file.
func runtimeHooksClient(c client.Reader, certFile, keyFile string) (runtimeclient.Client, error) {
	catalog, err := runtimehooks.NewCatalog()
	if err != nil {
		return nil, err
	}
	hooks, err := runtimehooks.New(runtimehooks.Options{Reader: c, Catalog: catalog, CertFile: certFile, KeyFile: keyFile})
	if err != nil {
		return nil, fmt.Errorf("runtime hooks client: %w", err)
	}
	return hooks, nil
}

// extensionCallers makes the CA the stack's in-place extension trusts and the client
// certificate every Runtime SDK caller of the stack presents, in a directory removed
// when ctx ends.
func extensionCallers(ctx context.Context) (caFile, certFile, keyFile string, err error) {
	dir, err := os.MkdirTemp("", "capk3s-extension-callers-")
	if err != nil {
		return "", "", "", err
	}
	go func() {
		<-ctx.Done()
		_ = os.RemoveAll(dir)
	}()
	ca, err := envtest.NewClientCA(dir)
	if err != nil {
		return "", "", "", err
	}
	certFile, keyFile, _, err = ca.Issue("capi-core")
	return ca.CAFile, certFile, keyFile, err
}
