package controlplane

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/exp/runtime/server"

	"github.com/capk3s/capk3s/internal/runtimehooks"
	"github.com/capk3s/capk3s/test/envtest"
)

// The whole CanUpdateMachine exchange over the wire: capk3s's Runtime SDK client posts
// the request to a real extension server (CAPI's server package, over TLS), whose
// handler decodes the objects, answers a JSON patch for the version, and the server
// is updated in place.
func TestInPlaceOverTheRuntimeSDK(t *testing.T) {
	var calls atomic.Int32
	var sawConfig atomic.Bool
	handler := func(_ context.Context, req *runtimehooksv1.CanUpdateMachineRequest, resp *runtimehooksv1.CanUpdateMachineResponse) {
		calls.Add(1)
		// The bootstrap config arrives as the KThreesConfig it is.
		var config struct {
			Kind string `json:"kind"`
		}
		sawConfig.Store(json.Unmarshal(req.Current.BootstrapConfig.Raw, &config) == nil && config.Kind == "KThreesConfig")
		patch, _ := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec/version", "value": req.Desired.Machine.Spec.Version}})
		resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
		resp.MachinePatch = runtimehooksv1.Patch{PatchType: runtimehooksv1.JSONPatchType, Patch: patch}
	}
	catalog, err := runtimehooks.NewCatalog()
	if err != nil {
		t.Fatal(err)
	}
	url, caBundle := serveExtension(t, catalog, server.ExtensionHandler{
		Hook: runtimehooksv1.CanUpdateMachine, Name: "can-update-machine", HandlerFunc: handler,
	})
	hooks, err := runtimehooks.New(runtimehooks.Options{Reader: env.Client, Catalog: catalog})
	if err != nil {
		t.Fatal(err)
	}
	ext := &runtimev1.ExtensionConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "capk3s-inplace", ResourceVersion: "1"},
		Spec:       runtimev1.ExtensionConfigSpec{ClientConfig: runtimev1.ClientConfig{URL: url, CABundle: caBundle}},
	}
	discovered, err := hooks.Discover(context.Background(), ext)
	if err != nil {
		t.Fatal(err)
	}
	if err := hooks.WarmUp(&runtimev1.ExtensionConfigList{Items: []runtimev1.ExtensionConfig{*discovered}}); err != nil {
		t.Fatal(err)
	}

	f := newInPlaceFixture(t, 3, 0, nil)
	f.runtime = hooks
	f.upgrade(t)
	f.pass(t)
	if marked := f.marked(t); len(marked) != 1 || calls.Load() != 1 || !sawConfig.Load() {
		t.Errorf("%v marked after %d calls (config seen: %v); want one server after one call", marked, calls.Load(), sawConfig.Load())
	}
}

// An extension registered with failurePolicy Fail that cannot be reached (its
// server is down, its Service has no endpoints) fails the question over the wire: the
// rollout waits and asks again; it does not replace the server.
func TestInPlaceWaitsForAnUnreachableExtension(t *testing.T) {
	handler := func(_ context.Context, _ *runtimehooksv1.CanUpdateMachineRequest, resp *runtimehooksv1.CanUpdateMachineResponse) {
		resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
	}
	catalog, err := runtimehooks.NewCatalog()
	if err != nil {
		t.Fatal(err)
	}
	url, caBundle := serveExtension(t, catalog, server.ExtensionHandler{
		Hook: runtimehooksv1.CanUpdateMachine, Name: "can-update-machine", HandlerFunc: handler,
		FailurePolicy: ptr.To(runtimehooksv1.FailurePolicyFail),
	})
	hooks, err := runtimehooks.New(runtimehooks.Options{Reader: env.Client, Catalog: catalog})
	if err != nil {
		t.Fatal(err)
	}
	discovered, err := hooks.Discover(context.Background(), &runtimev1.ExtensionConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "capk3s-inplace", ResourceVersion: "1"},
		Spec:       runtimev1.ExtensionConfigSpec{ClientConfig: runtimev1.ClientConfig{URL: url, CABundle: caBundle}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The extension moves to a port nothing listens on.
	port, err := envtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	discovered.Spec.ClientConfig.URL = "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := hooks.WarmUp(&runtimev1.ExtensionConfigList{Items: []runtimev1.ExtensionConfig{*discovered}}); err != nil {
		t.Fatal(err)
	}

	f := newInPlaceFixture(t, 3, 0, nil)
	f.runtime = hooks
	f.upgrade(t)
	for range 2 {
		if _, err := f.try(t); err == nil {
			t.Error("a pass whose extension cannot be reached returned no error")
		}
	}
	if n, marked := len(f.servers(t)), f.marked(t); n != 3 || len(marked) != 0 {
		t.Errorf("%d servers, %v marked while the extension cannot be reached; want 3, none", n, marked)
	}
}

// serveExtension runs a Runtime SDK extension server on a free local port with a
// self-signed certificate until the test ends, and returns its URL and CA bundle.
func serveExtension(t *testing.T, catalog *runtimecatalog.Catalog, handlers ...server.ExtensionHandler) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	crt, key, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := envtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Catalog: catalog, Host: "127.0.0.1", Port: port, CertDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range handlers {
		if err := srv.AddExtensionHandler(h); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("extension server: %v", err)
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := envtest.Eventually(ctx, 10*time.Second, func(context.Context) (bool, error) {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			_ = conn.Close()
		}
		return err == nil, nil
	}); err != nil {
		t.Fatalf("extension server did not come up: %v", err)
	}
	return "https://" + addr, crt
}
