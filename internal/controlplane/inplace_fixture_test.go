package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"
	runtimeclient "sigs.k8s.io/cluster-api/exp/runtime/client"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/test/builder"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"

	"github.com/capk3s/capk3s/test/cpfixtures"
)

// testRuntimeClient is a Runtime SDK client with one CanUpdateMachine extension whose
// answer the test chooses; it counts the calls.
type testRuntimeClient struct {
	mu       sync.Mutex
	notReady bool
	handlers []string
	// answer answers a CanUpdateMachine request; an error is the call failing.
	answer func(*runtimehooksv1.CanUpdateMachineRequest) (*runtimehooksv1.CanUpdateMachineResponse, error)
	calls  int
}

var _ runtimeclient.Client = &testRuntimeClient{}

func (c *testRuntimeClient) WarmUp(*runtimev1.ExtensionConfigList) error { return nil }
func (c *testRuntimeClient) IsReady() bool                               { return !c.notReady }
func (c *testRuntimeClient) Discover(context.Context, *runtimev1.ExtensionConfig) (*runtimev1.ExtensionConfig, error) {
	return nil, errors.New("not served by the test client")
}
func (c *testRuntimeClient) Register(*runtimev1.ExtensionConfig) error   { return nil }
func (c *testRuntimeClient) Unregister(*runtimev1.ExtensionConfig) error { return nil }
func (c *testRuntimeClient) GetAllExtensions(_ context.Context, hook runtimecatalog.Hook, _ client.Object) ([]string, error) {
	if runtimecatalog.HookName(hook) != runtimecatalog.HookName(runtimehooksv1.CanUpdateMachine) {
		return nil, nil
	}
	return c.handlers, nil
}
func (c *testRuntimeClient) CallAllExtensions(context.Context, runtimecatalog.Hook, client.Object, runtimehooksv1.RequestObject, runtimehooksv1.ResponseObject) error {
	return errors.New("not served by the test client")
}
func (c *testRuntimeClient) CallExtension(_ context.Context, hook runtimecatalog.Hook, _ client.Object, _ string,
	req runtimehooksv1.RequestObject, resp runtimehooksv1.ResponseObject, _ ...runtimeclient.CallExtensionOption) error {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	if runtimecatalog.HookName(hook) != runtimecatalog.HookName(runtimehooksv1.CanUpdateMachine) {
		return fmt.Errorf("unexpected hook %s", runtimecatalog.HookName(hook))
	}
	answer, err := c.answer(req.(*runtimehooksv1.CanUpdateMachineRequest))
	if err != nil {
		return err
	}
	*resp.(*runtimehooksv1.CanUpdateMachineResponse) = *answer
	return nil
}

func (c *testRuntimeClient) callCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// coversVersion is an extension that covers a change of the k3s version, and nothing
// else.
func coversVersion() *testRuntimeClient {
	return &testRuntimeClient{handlers: []string{"can-update-machine.capk3s-inplace"},
		answer: func(req *runtimehooksv1.CanUpdateMachineRequest) (*runtimehooksv1.CanUpdateMachineResponse, error) {
			p, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec/version", "value": req.Desired.Machine.Spec.Version}})
			return &runtimehooksv1.CanUpdateMachineResponse{
				CommonResponse: runtimehooksv1.CommonResponse{Status: runtimehooksv1.ResponseStatusSuccess},
				MachinePatch:   runtimehooksv1.Patch{PatchType: runtimehooksv1.JSONPatchType, Patch: p},
			}, err
		}}
}

// inPlaceFixture is a control plane with its servers created by scaleUp, paused so
// that no manager of the package acts on it: the test runs the passes.
type inPlaceFixture struct {
	cluster *clusterv1.Cluster
	kcp     *controlplanev1.KThreesControlPlane
	rc      *testRuntimeClient
	// runtime, when set, is the Runtime SDK client the passes use instead of rc.
	runtime runtimeclient.Client
}

func newInPlaceFixture(t *testing.T, replicas int32, maxSurge int, rc *testRuntimeClient) *inPlaceFixture {
	t.Helper()
	return newInPlaceFixtureWith(t, replicas, maxSurge, rc, func(ns string, _ *controlplanev1.KThreesControlPlane) {
		createInfraTemplate(t, ns)
	})
}

// newInPlaceFixtureWith is newInPlaceFixture with the infrastructure template that
// setup creates in the namespace and names in the control plane.
func newInPlaceFixtureWith(t *testing.T, replicas int32, maxSurge int, rc *testRuntimeClient,
	setup func(ns string, kcp *controlplanev1.KThreesControlPlane)) *inPlaceFixture {
	t.Helper()
	ns := env.NewNamespace(t)
	cluster, kcp := newClusterWithControlPlane(t, ns, true)
	setup(ns, kcp)
	kcp.Spec.Replicas = ptr.To(replicas)
	// The snapshot before a rollout has tests of its own (rollout_snapshot_env_test.go,
	// which turn it back on); these are about what comes after it.
	kcp.Spec.RolloutStrategy = &controlplanev1.RolloutStrategy{RollingUpdate: &controlplanev1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt(maxSurge))},
		EtcdSnapshot: controlplanev1.EtcdSnapshotBeforeRolloutDisabled}
	kcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	f := &inPlaceFixture{cluster: cluster, kcp: kcp, rc: rc}
	r := f.reconciler()
	for range replicas {
		if err := r.scaleUp(context.Background(), cluster, kcp, collections.New(), nil); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// reconciler is a fresh reconciler, as after a restart of the manager.
func (f *inPlaceFixture) reconciler() *Reconciler {
	r := &Reconciler{Client: env.Client}
	switch {
	case f.runtime != nil:
		r.RuntimeClient = f.runtime
	case f.rc != nil:
		r.RuntimeClient = f.rc
	}
	return r
}

// observe reads the servers as a pass does; every Node is Ready but those listed.
func (f *inPlaceFixture) observe(t *testing.T, r *Reconciler, notReady ...string) *observed {
	t.Helper()
	ctx := context.Background()
	seen := &observed{}
	var err error
	if seen.machines, err = r.controlPlaneMachines(ctx, f.cluster, f.kcp); err != nil {
		t.Fatal(err)
	}
	if seen.objects, err = r.propagate(ctx, f.cluster, f.kcp, seen.machines); err != nil {
		t.Fatal(err)
	}
	var ready []string
	for _, name := range seen.machines.Names() {
		if !strings.Contains(strings.Join(notReady, ","), name) {
			ready = append(ready, name)
		}
	}
	seen.nodes = cpfixtures.ReadyNodes(ready...)
	return seen
}

// pass runs one pass of a fresh reconciler over the servers and computes the control
// plane's status from what it saw.
func (f *inPlaceFixture) pass(t *testing.T, notReady ...string) {
	t.Helper()
	if _, err := f.try(t, notReady...); err != nil {
		t.Fatal(err)
	}
}

// try is pass that returns what the pass returned: when to be woken, or its error
// (after which controller-runtime retries it).
func (f *inPlaceFixture) try(t *testing.T, notReady ...string) (ctrl.Result, error) {
	t.Helper()
	r := f.reconciler()
	seen := f.observe(t, r, notReady...)
	result, err := r.reconcileServers(context.Background(), f.cluster, f.kcp, true, seen)
	setStatus(f.cluster, f.kcp, *seen)
	return result, err
}

// upgradeVersion is the version every upgrade in these tests asks for.
const upgradeVersion = "v1.32.1+k3s1"

// upgrade asks for upgradeVersion and runs the pass that sees it: it marks the servers
// outdated (their UpToDate conditions), and waits for the cache to show that.
func (f *inPlaceFixture) upgrade(t *testing.T) {
	t.Helper()
	f.kcp.Spec.Version = upgradeVersion
	f.pass(t)
	if marked := f.marked(t); len(marked) != 0 {
		t.Fatalf("%v marked on the pass that wrote their UpToDate conditions", marked)
	}
}

func (f *inPlaceFixture) servers(t *testing.T) map[string]*clusterv1.Machine {
	t.Helper()
	return listServers(t, f.kcp.Namespace)
}

// finish plays CAPI's Machine controller ending an in-place update: the annotation
// off the Machine, its infrastructure machine and config, then the hook done.
func (f *inPlaceFixture) finish(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	key := client.ObjectKey{Namespace: f.kcp.Namespace, Name: name}
	infra := &unstructured.Unstructured{}
	infra.SetGroupVersionKind(f.infraMachineGVK(t, name))
	for _, obj := range []client.Object{&clusterv1.Machine{}, infra, &bootstrapv1.KThreesConfig{}} {
		if err := env.Client.Get(ctx, key, obj); err != nil {
			t.Fatal(err)
		}
		before := obj.DeepCopyObject().(client.Object)
		a := obj.GetAnnotations()
		delete(a, clusterv1.UpdateInProgressAnnotation)
		if _, ok := obj.(*clusterv1.Machine); ok {
			delete(a, runtimev1.PendingHooksAnnotation)
		}
		obj.SetAnnotations(a)
		if err := env.Client.Patch(ctx, obj, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
	}
}

// marked names the servers marked for an in-place update, and checks each is marked
// completely: all three objects annotated, the hook pending, the new specs written.
func (f *inPlaceFixture) marked(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for name, m := range f.servers(t) {
		if !updatingInPlace(m) {
			continue
		}
		out = append(out, name)
		if !updateHookPending(m) || m.Spec.Version != f.kcp.Spec.Version {
			t.Errorf("Machine %s: hook pending %v, version %s; want the hook and %s", name, updateHookPending(m), m.Spec.Version, f.kcp.Spec.Version)
		}
		config := &bootstrapv1.KThreesConfig{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, config); err != nil {
			t.Fatal(err)
		}
		infra, err := external.GetObjectFromContractVersionedRef(ctx, env.Client, m.Spec.InfrastructureRef, m.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range []client.Object{config, infra} {
			if _, ok := obj.GetAnnotations()[clusterv1.UpdateInProgressAnnotation]; !ok {
				t.Errorf("%T %s lacks the update-in-progress annotation", obj, name)
			}
		}
	}
	return sorted(out)
}

func requireRollingOut(t *testing.T, kcp *controlplanev1.KThreesControlPlane, reason, message string) {
	t.Helper()
	c := conditions.Get(kcp, controlplanev1.RollingOutCondition)
	if c == nil || c.Reason != reason || !strings.Contains(c.Message, message) {
		t.Errorf("RollingOut = %+v, want reason %s with %q in the message", c, reason, message)
	}
}

// infraMachineGVK is the kind and version of a server's infrastructure machine.
func (f *inPlaceFixture) infraMachineGVK(t *testing.T, name string) schema.GroupVersionKind {
	t.Helper()
	infra, err := external.GetObjectFromContractVersionedRef(context.Background(), env.Client,
		f.servers(t)[name].Spec.InfrastructureRef, f.kcp.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	return infra.GroupVersionKind()
}

func genericInfraMachineGVK() schema.GroupVersionKind {
	return builder.InfrastructureGroupVersion.WithKind(builder.GenericInfrastructureMachineKind)
}
