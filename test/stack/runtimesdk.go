package stack

import (
	"fmt"

	runtimeclient "sigs.k8s.io/cluster-api/exp/runtime/client"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/runtimehooks"
)

// runtimeHooksClient is the one Runtime SDK client of the stack, shared by CAPI's
// ExtensionConfig, Machine and MachineDeployment reconcilers and capk3s's control
// plane, as one registry per process is in CAPI's managers.
func runtimeHooksClient(c client.Reader) (runtimeclient.Client, error) {
	catalog, err := runtimehooks.NewCatalog()
	if err != nil {
		return nil, err
	}
	hooks, err := runtimehooks.New(runtimehooks.Options{Reader: c, Catalog: catalog})
	if err != nil {
		return nil, fmt.Errorf("runtime hooks client: %w", err)
	}
	return hooks, nil
}
