package runtimehooks

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	runtimeclient "sigs.k8s.io/cluster-api/exp/runtime/client"
	"sigs.k8s.io/cluster-api/exp/runtime/server"
	"sigs.k8s.io/cluster-api/util/cache"
)

func machineIn(namespace string) *clusterv1.Machine {
	return &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "server-0", Namespace: namespace}}
}

func TestDiscoverRegisterAndCall(t *testing.T) {
	cat := newCatalog(t)
	ext := startExtension(t, cat,
		server.ExtensionHandler{Hook: runtimehooksv1.UpdateMachine, Name: "update-machine", HandlerFunc: retryFromSettings},
		server.ExtensionHandler{
			Hook: runtimehooksv1.CanUpdateMachine, Name: "can-update-machine", TimeoutSeconds: ptr.To[int32](5), FailurePolicy: ignorePolicy(),
			HandlerFunc: func(_ context.Context, req *runtimehooksv1.CanUpdateMachineRequest, resp *runtimehooksv1.CanUpdateMachineResponse) {
				resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
				resp.MachinePatch = runtimehooksv1.Patch{PatchType: runtimehooksv1.JSONMergePatchType, Patch: []byte(`{"spec":{"version":"` + req.Desired.Machine.Spec.Version + `"}}`)}
			},
		})
	c := newTestClient(t, cat)
	ctx := context.Background()

	if c.IsReady() {
		t.Fatal("ready before WarmUp")
	}
	if _, err := c.GetAllExtensions(ctx, runtimehooksv1.CanUpdateMachine, machineIn("ns")); !errors.Is(err, errNotReady) {
		t.Fatalf("GetAllExtensions before WarmUp: got %v, want the not-ready error", err)
	}
	if err := c.WarmUp(&runtimev1.ExtensionConfigList{}); err != nil || !c.IsReady() {
		t.Fatalf("WarmUp: %v, ready %v", err, c.IsReady())
	}

	discovered := discoverAndRegister(t, c, extensionConfig("k3s", ext, map[string]string{"extra": "from-config"}, nil))
	want := map[string]runtimev1.ExtensionHandler{
		"update-machine.k3s":     {Name: "update-machine.k3s", RequestHook: runtimev1.GroupVersionHook{APIVersion: runtimehooksv1.GroupVersion.String(), Hook: "UpdateMachine"}, TimeoutSeconds: runtimehooksv1.DefaultHandlersTimeoutSeconds, FailurePolicy: runtimev1.FailurePolicyFail},
		"can-update-machine.k3s": {Name: "can-update-machine.k3s", RequestHook: runtimev1.GroupVersionHook{APIVersion: runtimehooksv1.GroupVersion.String(), Hook: "CanUpdateMachine"}, TimeoutSeconds: 5, FailurePolicy: runtimev1.FailurePolicyIgnore},
	}
	if len(discovered.Status.Handlers) != len(want) {
		t.Fatalf("discovered %+v, want %d handlers", discovered.Status.Handlers, len(want))
	}
	for _, h := range discovered.Status.Handlers {
		if h != want[h.Name] {
			t.Errorf("discovered %+v, want %+v", h, want[h.Name])
		}
	}

	names, err := c.GetAllExtensions(ctx, runtimehooksv1.CanUpdateMachine, machineIn("ns"))
	if err != nil || len(names) != 1 || names[0] != "can-update-machine.k3s" {
		t.Fatalf("GetAllExtensions(CanUpdateMachine) = %v, %v", names, err)
	}
	req := &runtimehooksv1.CanUpdateMachineRequest{}
	req.Desired.Machine.Spec.Version = "v1.32.1+k3s1"
	resp := &runtimehooksv1.CanUpdateMachineResponse{}
	if err := c.CallExtension(ctx, runtimehooksv1.CanUpdateMachine, machineIn("ns"), names[0], req, resp); err != nil {
		t.Fatalf("CallExtension: %v", err)
	}
	if string(resp.MachinePatch.Patch) != `{"spec":{"version":"v1.32.1+k3s1"}}` || resp.MachinePatch.PatchType != runtimehooksv1.JSONMergePatchType {
		t.Fatalf("machine patch %+v", resp.MachinePatch)
	}
	if req.Settings != nil {
		t.Fatalf("the caller's request was changed: settings %v", req.Settings)
	}

	// A handler of one hook is not called for another.
	err = c.CallExtension(ctx, runtimehooksv1.UpdateMachine, machineIn("ns"), "can-update-machine.k3s", &runtimehooksv1.UpdateMachineRequest{}, &runtimehooksv1.UpdateMachineResponse{})
	if err == nil || !strings.Contains(err.Error(), "serves") {
		t.Fatalf("calling a CanUpdateMachine handler for UpdateMachine: %v", err)
	}

	if err := c.Unregister(discovered); err != nil {
		t.Fatal(err)
	}
	if names, err := c.GetAllExtensions(ctx, runtimehooksv1.CanUpdateMachine, machineIn("ns")); err != nil || len(names) != 0 {
		t.Fatalf("after Unregister: %v, %v", names, err)
	}
}

func TestCallAllExtensionsMergesAnswers(t *testing.T) {
	cat := newCatalog(t)
	ext := startExtension(t, cat, server.ExtensionHandler{Hook: runtimehooksv1.UpdateMachine, Name: "update-machine", HandlerFunc: retryFromSettings})
	c := newTestClient(t, cat)
	if err := c.WarmUp(&runtimev1.ExtensionConfigList{}); err != nil {
		t.Fatal(err)
	}
	// Two ExtensionConfigs for the same server; each passes its own settings.
	discoverAndRegister(t, c, extensionConfig("slow", ext, map[string]string{"retry": "30"}, nil))
	discoverAndRegister(t, c, extensionConfig("fast", ext, map[string]string{"retry": "5"}, nil))
	discoverAndRegister(t, c, extensionConfig("done", ext, map[string]string{"retry": "0"}, nil))

	req := &runtimehooksv1.UpdateMachineRequest{}
	req.Desired.Machine.Name = "server-0"
	req.Settings = map[string]string{"extra": "from-request"}
	resp := &runtimehooksv1.UpdateMachineResponse{}
	if err := c.CallAllExtensions(context.Background(), runtimehooksv1.UpdateMachine, machineIn("ns"), req, resp); err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus() != runtimehooksv1.ResponseStatusSuccess || resp.GetRetryAfterSeconds() != 5 {
		t.Fatalf("merged answer: status %q retry %d, want Success and the shortest non-zero retry 5", resp.GetStatus(), resp.GetRetryAfterSeconds())
	}
	// Handlers are called in name order; the request's own settings win over the
	// ExtensionConfig's.
	wantMessage := "machine server-0, retry 0, extra from-request, machine server-0, retry 5, extra from-request, machine server-0, retry 30, extra from-request"
	if resp.GetMessage() != wantMessage {
		t.Fatalf("message %q\nwant    %q", resp.GetMessage(), wantMessage)
	}
}

func TestFailuresAndFailurePolicy(t *testing.T) {
	cat := newCatalog(t)
	ext := startExtension(t, cat, server.ExtensionHandler{
		Hook: runtimehooksv1.UpdateMachine, Name: "update-machine",
		HandlerFunc: func(_ context.Context, _ *runtimehooksv1.UpdateMachineRequest, resp *runtimehooksv1.UpdateMachineResponse) {
			resp.SetStatus(runtimehooksv1.ResponseStatusFailure)
			resp.SetMessage("the node is gone")
		},
	})
	c := newTestClient(t, cat)
	if err := c.WarmUp(&runtimev1.ExtensionConfigList{}); err != nil {
		t.Fatal(err)
	}
	discoverAndRegister(t, c, extensionConfig("failing", ext, nil, nil))
	ctx := context.Background()
	resp := &runtimehooksv1.UpdateMachineResponse{}
	err := c.CallExtension(ctx, runtimehooksv1.UpdateMachine, machineIn("ns"), "update-machine.failing", &runtimehooksv1.UpdateMachineRequest{}, resp)
	if err == nil || !strings.Contains(err.Error(), "the node is gone") || resp.GetStatus() != runtimehooksv1.ResponseStatusFailure {
		t.Fatalf("a Failure answer: err %v, response status %q", err, resp.GetStatus())
	}

	// An extension that is not listening: Fail reports it, Ignore forgives it.
	gone := testExtension{url: "https://127.0.0.1:" + itoa(freePort(t)), caBundle: ext.caBundle}
	for _, policy := range []runtimev1.FailurePolicy{runtimev1.FailurePolicyFail, runtimev1.FailurePolicyIgnore} {
		cfg := extensionConfig("gone-"+strings.ToLower(string(policy)), gone, nil, nil)
		cfg.Status.Handlers = []runtimev1.ExtensionHandler{{
			Name:          registeredName("update-machine", cfg.Name),
			RequestHook:   runtimev1.GroupVersionHook{APIVersion: runtimehooksv1.GroupVersion.String(), Hook: "UpdateMachine"},
			FailurePolicy: policy, TimeoutSeconds: 2,
		}}
		if err := c.Register(cfg); err != nil {
			t.Fatal(err)
		}
		resp := &runtimehooksv1.UpdateMachineResponse{}
		err := c.CallExtension(ctx, runtimehooksv1.UpdateMachine, machineIn("ns"), cfg.Status.Handlers[0].Name, &runtimehooksv1.UpdateMachineRequest{}, resp)
		switch policy {
		case runtimev1.FailurePolicyFail:
			var unreachable unreachableError
			if !errors.As(err, &unreachable) {
				t.Fatalf("unreachable extension with Fail: %v", err)
			}
		default:
			if err != nil || resp.GetStatus() != runtimehooksv1.ResponseStatusSuccess {
				t.Fatalf("unreachable extension with Ignore: %v, status %q", err, resp.GetStatus())
			}
		}
		if err := c.Unregister(cfg); err != nil {
			t.Fatal(err)
		}
	}

	if err := c.CallExtension(ctx, runtimehooksv1.UpdateMachine, machineIn("ns"), "update-machine.nobody", &runtimehooksv1.UpdateMachineRequest{}, &runtimehooksv1.UpdateMachineResponse{}); err == nil {
		t.Fatal("calling a handler nobody registered succeeded")
	}
}

func TestNamespaceSelector(t *testing.T) {
	cat := newCatalog(t)
	ext := startExtension(t, cat, server.ExtensionHandler{Hook: runtimehooksv1.UpdateMachine, Name: "update-machine", HandlerFunc: retryFromSettings})
	c := newTestClient(t, cat,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "edge", Labels: map[string]string{"fleet": "edge"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "core"}})
	if err := c.WarmUp(&runtimev1.ExtensionConfigList{}); err != nil {
		t.Fatal(err)
	}
	discoverAndRegister(t, c, extensionConfig("edge-only", ext, nil, &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "edge"}}))
	ctx := context.Background()
	if names, err := c.GetAllExtensions(ctx, runtimehooksv1.UpdateMachine, machineIn("edge")); err != nil || len(names) != 1 {
		t.Fatalf("in the selected namespace: %v, %v", names, err)
	}
	if names, err := c.GetAllExtensions(ctx, runtimehooksv1.UpdateMachine, machineIn("core")); err != nil || len(names) != 0 {
		t.Fatalf("in another namespace: %v, %v", names, err)
	}
	err := c.CallExtension(ctx, runtimehooksv1.UpdateMachine, machineIn("core"), "update-machine.edge-only", &runtimehooksv1.UpdateMachineRequest{}, &runtimehooksv1.UpdateMachineResponse{})
	if err == nil || !strings.Contains(err.Error(), "does not select namespace core") {
		t.Fatalf("calling for an object outside the selector: %v", err)
	}
}

func TestCachedCallsDoNotReachTheExtension(t *testing.T) {
	cat := newCatalog(t)
	calls := 0
	ext := startExtension(t, cat, server.ExtensionHandler{
		Hook: runtimehooksv1.UpdateMachine, Name: "update-machine",
		HandlerFunc: func(_ context.Context, _ *runtimehooksv1.UpdateMachineRequest, resp *runtimehooksv1.UpdateMachineResponse) {
			calls++
			resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
			resp.SetMessage("call " + itoa(calls))
		},
	})
	c := newTestClient(t, cat)
	if err := c.WarmUp(&runtimev1.ExtensionConfigList{}); err != nil {
		t.Fatal(err)
	}
	discoverAndRegister(t, c, extensionConfig("cached", ext, nil, nil))
	opt := runtimeclient.WithCaching{
		Cache: cache.New[runtimeclient.CallExtensionCacheEntry](context.Background(), cache.DefaultTTL),
		CacheKeyFunc: func(name, rv string, _ runtimehooksv1.RequestObject) string {
			return name + "/" + rv
		},
	}
	for i := range 2 {
		resp := &runtimehooksv1.UpdateMachineResponse{}
		if err := c.CallExtension(context.Background(), runtimehooksv1.UpdateMachine, machineIn("ns"), "update-machine.cached", &runtimehooksv1.UpdateMachineRequest{}, resp, opt); err != nil {
			t.Fatal(err)
		}
		if resp.GetMessage() != "call 1" {
			t.Fatalf("call %d answered %q, want the first answer from the cache", i+1, resp.GetMessage())
		}
	}
	if calls != 1 {
		t.Fatalf("the extension was called %d times, want 1", calls)
	}
}

func TestDiscoveryRefusesWhatTheContractForbids(t *testing.T) {
	c := newTestClient(t, newCatalog(t))
	apiVersion := runtimehooksv1.GroupVersion.String()
	for _, tc := range []struct {
		name    string
		handler runtimehooksv1.ExtensionHandler
		want    string
	}{
		{"not a DNS label", runtimehooksv1.ExtensionHandler{Name: "Update_Machine", RequestHook: runtimehooksv1.GroupVersionHook{APIVersion: apiVersion, Hook: "UpdateMachine"}}, `handler name "Update_Machine"`},
		{"timeout too long", runtimehooksv1.ExtensionHandler{Name: "slow", TimeoutSeconds: ptr.To[int32](31), RequestHook: runtimehooksv1.GroupVersionHook{APIVersion: apiVersion, Hook: "UpdateMachine"}}, "timeoutSeconds 31"},
		{"unknown policy", runtimehooksv1.ExtensionHandler{Name: "odd", FailurePolicy: ptr.To(runtimehooksv1.FailurePolicy("Sometimes")), RequestHook: runtimehooksv1.GroupVersionHook{APIVersion: apiVersion, Hook: "UpdateMachine"}}, `failurePolicy "Sometimes"`},
		{"unknown hook", runtimehooksv1.ExtensionHandler{Name: "mystery", RequestHook: runtimehooksv1.GroupVersionHook{APIVersion: apiVersion, Hook: "Teleport"}}, "Teleport is not one this client knows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.discoveredHandlers("ext", []runtimehooksv1.ExtensionHandler{tc.handler})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	dup := runtimehooksv1.ExtensionHandler{Name: "twice", RequestHook: runtimehooksv1.GroupVersionHook{APIVersion: apiVersion, Hook: "UpdateMachine"}}
	if _, err := c.discoveredHandlers("ext", []runtimehooksv1.ExtensionHandler{dup, dup}); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Fatalf("a handler listed twice: %v", err)
	}
}

func TestEndpoint(t *testing.T) {
	gvh, err := newCatalog(t).GroupVersionHook(runtimehooksv1.CanUpdateMachine)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg     runtimev1.ClientConfig
		want    string
		wantErr string
	}{
		{cfg: runtimev1.ClientConfig{Service: runtimev1.ServiceReference{Name: "capk3s-webhook", Namespace: "capk3s-system", Port: ptr.To[int32](9444)}},
			want: "https://capk3s-webhook.capk3s-system.svc:9444/hooks.runtime.cluster.x-k8s.io/v1alpha1/canupdatemachine/can-update-machine"},
		{cfg: runtimev1.ClientConfig{Service: runtimev1.ServiceReference{Name: "ext", Namespace: "ns", Path: "/base"}},
			want: "https://ext.ns.svc/base/hooks.runtime.cluster.x-k8s.io/v1alpha1/canupdatemachine/can-update-machine"},
		{cfg: runtimev1.ClientConfig{URL: "https://10.0.0.1:8443/x"},
			want: "https://10.0.0.1:8443/x/hooks.runtime.cluster.x-k8s.io/v1alpha1/canupdatemachine/can-update-machine"},
		{cfg: runtimev1.ClientConfig{URL: "http://10.0.0.1"}, wantErr: "https only"},
		{cfg: runtimev1.ClientConfig{}, wantErr: "neither a service nor a url"},
	} {
		u, err := endpoint(tc.cfg, gvh, "can-update-machine")
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%+v: got %v, want an error containing %q", tc.cfg, err, tc.wantErr)
			}
		case err != nil || u.String() != tc.want:
			t.Errorf("%+v: got %v, %v; want %s", tc.cfg, u, err, tc.want)
		}
	}
}

func TestNewRefusesIncompleteOptions(t *testing.T) {
	cat := newCatalog(t)
	if _, err := New(Options{Catalog: cat}); err == nil {
		t.Error("New without a reader succeeded")
	}
	c := newTestClient(t, cat)
	if _, err := New(Options{Reader: c.reader, Catalog: cat, CertFile: "tls.crt"}); err == nil {
		t.Error("New with a certificate but no key succeeded")
	}
	if err := c.Register(&runtimev1.ExtensionConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Status: runtimev1.ExtensionConfigStatus{Handlers: []runtimev1.ExtensionHandler{{Name: "no-suffix",
			RequestHook: runtimev1.GroupVersionHook{APIVersion: runtimehooksv1.GroupVersion.String(), Hook: "UpdateMachine"}}}},
	}); err == nil {
		t.Error("registering a handler not named <handler>.<ExtensionConfig> succeeded")
	}
}
