package e2e

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/exp/runtime/server"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/runtimehooks"
	"github.com/capk3s/capk3s/test/envtest"
)

// TestRuntimeSDKDiscoversExtensions checks the stack's Runtime SDK wiring: CAPI's
// ExtensionConfig reconciler, with capk3s's Runtime SDK client, reaches an extension
// over TLS and records its handlers, as CAPI core does in a management cluster.
func TestRuntimeSDKDiscoversExtensions(t *testing.T) {
	startStack(t)
	ctx := context.Background()
	catalog, err := runtimehooks.NewCatalog()
	if err != nil {
		t.Fatal(err)
	}
	certDir, caBundle, host := env.ServingCert()
	port, err := envtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Catalog: catalog, Host: host, Port: port, CertDir: certDir})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.AddExtensionHandler(server.ExtensionHandler{
		Hook: runtimehooksv1.UpdateMachine, Name: "update-machine",
		HandlerFunc: func(_ context.Context, _ *runtimehooksv1.UpdateMachineRequest, resp *runtimehooksv1.UpdateMachineResponse) {
			resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
		},
	}); err != nil {
		t.Fatal(err)
	}
	srvCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Start(srvCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Logf("extension server: %v", err)
		}
	})

	ext := &runtimev1.ExtensionConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "discovery-check"},
		Spec: runtimev1.ExtensionConfigSpec{ClientConfig: runtimev1.ClientConfig{
			URL: "https://" + net.JoinHostPort(host, strconv.Itoa(port)), CABundle: caBundle,
		}},
	}
	c := env.Client
	if err := c.Create(ctx, ext); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, ext) })
	err = envtest.Eventually(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ext), ext); err != nil {
			return false, err
		}
		return conditions.IsTrue(ext, runtimev1.ExtensionConfigDiscoveredCondition) && len(ext.Status.Handlers) == 1, nil
	})
	if err != nil {
		t.Fatalf("the ExtensionConfig was not discovered: %v; status %+v", err, ext.Status)
	}
	h := ext.Status.Handlers[0]
	if h.Name != "update-machine.discovery-check" || h.RequestHook.Hook != "UpdateMachine" || h.FailurePolicy != runtimev1.FailurePolicyFail {
		t.Fatalf("discovered handler %+v", h)
	}
}
