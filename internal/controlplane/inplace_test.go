package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// A k3s upgrade that the extension covers updates the three servers in place, one at a
// time, each only once the previous one is done: the same Machines throughout, none
// created or deleted, one CanUpdateMachine call per server.
func TestInPlaceUpgradeOneServerAtATime(t *testing.T) {
	f := newInPlaceFixture(t, 3, 0, coversVersion())
	names := keysOf(f.servers(t))
	f.pass(t) // at rest: nothing to do
	f.upgrade(t)
	for i := range 3 {
		f.pass(t)
		marked := f.marked(t)
		if len(marked) != 1 {
			t.Fatalf("round %d: servers updating in place %v, want one", i, marked)
		}
		requireRollingOut(t, f.kcp, controlplanev1.InPlaceUpdatingReason, "Updating in place: "+marked[0])
		// More passes change nothing while the update runs: no second server, no
		// second question to the extension; they say the server is updating.
		calls := f.rc.callCount()
		f.pass(t)
		if again := f.marked(t); strings.Join(again, ",") != strings.Join(marked, ",") || f.rc.callCount() != calls {
			t.Fatalf("round %d: a pass during the update marked %v and asked %d more times", i, again, f.rc.callCount()-calls)
		}
		requireRollingOut(t, f.kcp, controlplanev1.InPlaceUpdatingReason, "Updating in place: "+marked[0])
		if m := f.servers(t)[marked[0]]; !conditions.IsFalse(m, clusterv1.MachineUpToDateCondition) ||
			conditions.GetReason(m, clusterv1.MachineUpToDateCondition) != clusterv1.MachineUpToDateUpdatingReason {
			t.Errorf("Machine %s UpToDate = %+v, want False/%s", marked[0], conditions.Get(m, clusterv1.MachineUpToDateCondition), clusterv1.MachineUpToDateUpdatingReason)
		}
		f.finish(t, marked[0])
	}
	f.pass(t)
	if got := keysOf(f.servers(t)); strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("servers %v after the upgrade, want the same %v", got, names)
	}
	for name, m := range f.servers(t) {
		if m.Spec.Version != "v1.32.1+k3s1" || !conditions.IsTrue(m, clusterv1.MachineUpToDateCondition) {
			t.Errorf("Machine %s: version %s, UpToDate %+v", name, m.Spec.Version, conditions.Get(m, clusterv1.MachineUpToDateCondition))
		}
	}
	if f.rc.callCount() != 3 {
		t.Errorf("%d CanUpdateMachine calls, want 3", f.rc.callCount())
	}
	requireRollingOut(t, f.kcp, controlplanev1.NotRollingOutReason, "")
}

// With maxSurge 1 a new server comes first, as in a replacement; the outdated ones are
// updated in place while fewer than replicas are up to date, and the last one, surplus
// once enough are, is removed.
func TestInPlaceWithMaxSurgeOne(t *testing.T) {
	f := newInPlaceFixture(t, 3, 1, coversVersion())
	f.kcp.Spec.Version = "v1.32.1+k3s1"
	f.pass(t) // the new server needs no cache check
	if n := len(f.servers(t)); n != 4 {
		t.Fatalf("%d servers after the first pass, want a 4th, new one", n)
	}
	for range 2 {
		f.pass(t)
		marked := f.marked(t)
		if len(marked) != 1 {
			t.Fatalf("servers updating in place %v, want one", marked)
		}
		f.finish(t, marked[0])
	}
	f.pass(t)
	if n := len(f.servers(t)); n != 3 {
		t.Errorf("%d servers at the end, want 3: the surplus outdated one removed", n)
	}
	for name, m := range f.servers(t) {
		if m.Spec.Version != "v1.32.1+k3s1" {
			t.Errorf("Machine %s still on %s", name, m.Spec.Version)
		}
	}
}

// Whatever keeps a server from an in-place update, it is replaced as without the
// feature (maxSurge 0: removed first), and RollingOut says why where there is a why.
// Only an answer is such a reason: a question that fails is asked again
// (inplace_retry_test.go).
func TestInPlaceFallsBackToReplacement(t *testing.T) {
	refuses := coversVersion()
	refuses.answer = func(*runtimehooksv1.CanUpdateMachineRequest) (*runtimehooksv1.CanUpdateMachineResponse, error) {
		return &runtimehooksv1.CanUpdateMachineResponse{CommonResponse: runtimehooksv1.CommonResponse{Status: runtimehooksv1.ResponseStatusSuccess}}, nil
	}
	none := coversVersion()
	none.handlers = nil
	for _, tc := range []struct {
		name    string
		rc      *testRuntimeClient
		optOut  bool
		config  bool
		message string
	}{
		{"the extension covers nothing", refuses, false, false, "no update extension covers Machine spec.version"},
		{"the extension covers the version, not the config", coversVersion(), false, true, "no update extension covers KThreesConfig spec.serverConfig"},
		{"no extension is registered", none, false, false, "no update extension is registered"},
		{"the control plane opted out", coversVersion(), true, false, ""},
		{"the gate is off", nil, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newInPlaceFixture(t, 3, 0, tc.rc)
			f.kcp.Spec.Version = "v1.32.1+k3s1"
			if tc.config {
				f.kcp.Spec.KThreesConfigSpec.ServerConfig.DisableComponents = []string{"metrics-server"}
			}
			if tc.optOut {
				f.kcp.Spec.InPlaceUpdates = controlplanev1.InPlaceUpdateNever
			}
			// Without in-place updates the first pass removes a server; with them, it
			// waits for the cache to show the servers' new UpToDate conditions first.
			for range 2 {
				if f.pass(t); len(f.servers(t)) != 3 {
					break
				}
			}
			if marked := f.marked(t); len(marked) != 0 {
				t.Errorf("servers %v marked for an in-place update", marked)
			}
			if n := len(f.servers(t)); n != 2 {
				t.Errorf("%d servers, want 2: one removed to be replaced", n)
			}
			requireRollingOut(t, f.kcp, controlplanev1.RollingOutReason, tc.message)
			if tc.optOut && tc.rc.callCount() != 0 {
				t.Errorf("an opted-out control plane asked the extension %d times", tc.rc.callCount())
			}
		})
	}
}

// Preflight and the quorum rules hold an in-place update as they hold a replacement:
// with a server's Node not Ready nothing is marked and the extension is not asked.
func TestInPlaceBehindPreflight(t *testing.T) {
	f := newInPlaceFixture(t, 3, 0, coversVersion())
	f.kcp.Spec.Version = upgradeVersion
	names := keysOf(f.servers(t))
	for range 2 {
		f.pass(t, names[2])
	}
	if marked := f.marked(t); len(marked) != 0 || f.rc.callCount() != 0 {
		t.Errorf("with a Node not Ready: %v marked, %d calls", marked, f.rc.callCount())
	}
	requireRollingOut(t, f.kcp, controlplanev1.RollingOutReason, "node of Machine "+names[2])

	// The quorum rule of a maxSurge-0 rollout holds too (the webhook refuses such a
	// spec; one stored before it still meets the controller's rule).
	single := newInPlaceFixture(t, 1, 0, coversVersion())
	single.kcp.Spec.Version = upgradeVersion
	for range 2 {
		single.pass(t)
	}
	if marked := single.marked(t); len(marked) != 0 || single.rc.callCount() != 0 || len(single.servers(t)) != 1 {
		t.Errorf("a single server with maxSurge 0: %v marked, %d calls", marked, single.rc.callCount())
	}
	requireRollingOut(t, single.kcp, controlplanev1.RollingOutReason, "loses etcd quorum")
}

// An outdated server is not updated in place when enough servers are up to date
// already: a single server with maxSurge 1 gets its new server first, and the old one,
// then surplus, is removed without asking the extension.
func TestInPlaceSkippedWithEnoughUpToDateServers(t *testing.T) {
	f := newInPlaceFixture(t, 1, 1, coversVersion())
	old := keysOf(f.servers(t))[0]
	f.upgrade(t)
	if n := len(f.servers(t)); n != 2 {
		t.Fatalf("%d servers, want the new one created first", n)
	}
	f.pass(t)
	servers := f.servers(t)
	if _, kept := servers[old]; kept || len(servers) != 1 || f.rc.callCount() != 0 {
		t.Errorf("servers %v, %d CanUpdateMachine calls; want %s removed, unasked", keysOf(servers), f.rc.callCount(), old)
	}
}

// While a server updates in place the control plane takes no other step: a scale-up
// waits for the update to end.
func TestInPlaceHoldsOtherSteps(t *testing.T) {
	f := newInPlaceFixture(t, 3, 0, coversVersion())
	f.upgrade(t)
	f.pass(t)
	marked := f.marked(t)
	f.kcp.Spec.Replicas = ptr.To[int32](5)
	f.pass(t)
	if n := len(f.servers(t)); n != 3 {
		t.Errorf("%d servers during the update, want 3: no scale-up", n)
	}
	f.finish(t, marked[0])
	f.pass(t)
	if n := len(f.servers(t)); n != 4 {
		t.Errorf("%d servers after the update, want the scale-up to go on", n)
	}
}

// The trigger is re-entrant: a pass that stops after any of its writes (a crash, a
// failed write) is completed by the next pass of a fresh reconciler, which never asks
// the extension again once the Machine is marked, and never marks a second server.
func TestInPlaceTriggerIsReentrant(t *testing.T) {
	for stopAfter := range 4 {
		t.Run(fmt.Sprintf("stopped after %d writes", stopAfter), func(t *testing.T) {
			f := newInPlaceFixture(t, 3, 0, coversVersion())
			f.upgrade(t)
			// The pass observes with the real client (its own writes are not part of the
			// trigger), then triggers through one that fails after stopAfter writes.
			r := f.reconciler()
			seen := f.observe(t, r)
			inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
			if err != nil {
				t.Fatal(err)
			}
			writes := 0
			r.Client = interceptor.NewClient(inner, interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
					if writes == stopAfter {
						return errors.New("the manager stops here")
					}
					writes++
					return c.Patch(ctx, obj, p, opts...)
				},
			})
			if _, err := r.reconcileServers(context.Background(), f.cluster, f.kcp, true, seen); err == nil {
				t.Fatal("the interrupted pass reported no error")
			}
			calls := f.rc.callCount()
			f.pass(t)
			marked := f.marked(t)
			if len(marked) != 1 {
				t.Fatalf("after the restart %v are marked, want one server", marked)
			}
			if wantCalls := calls + map[bool]int{true: 1, false: 0}[stopAfter == 0]; f.rc.callCount() != wantCalls {
				t.Errorf("%d CanUpdateMachine calls after the restart, want %d", f.rc.callCount()-calls, wantCalls-calls)
			}
			// Once done, the server is up to date and the next one is updated, not it again.
			f.finish(t, marked[0])
			f.pass(t)
			if next := f.marked(t); len(next) != 1 || next[0] == marked[0] {
				t.Errorf("after %s's update, %v are marked; want another server", marked[0], next)
			}
		})
	}
}

// A pass whose cache lags behind the trigger's writes starts no second update: not on
// another server while the first one's mark is not in its view, and not on the same
// server again once its update has ended.
func TestInPlaceWaitsForALaggingCache(t *testing.T) {
	f := newInPlaceFixture(t, 3, 0, coversVersion())
	f.kcp.Spec.Version = upgradeVersion
	r := f.reconciler()
	f.observe(t, r) // writes the servers' UpToDate conditions
	// Two views of the servers before any update, for passes of a lagging cache.
	stale1, stale2 := f.observe(t, r), f.observe(t, r)
	f.pass(t)
	marked := f.marked(t)
	if len(marked) != 1 {
		t.Fatalf("%v marked, want one server", marked)
	}
	if _, err := r.reconcileServers(context.Background(), f.cluster, f.kcp, true, stale1); err != nil {
		t.Fatal(err)
	}
	if again := f.marked(t); len(again) != 1 || f.rc.callCount() != 1 {
		t.Errorf("a pass on a cache without %s's mark marked %v and asked %d times, want nothing more", marked[0], again, f.rc.callCount())
	}
	// Nor would any other server be started while the API server has one marked, even
	// one whose own objects the cache shows as they are.
	for name, m := range stale1.machines {
		if name == marked[0] {
			continue
		}
		if behind, err := r.cacheBehind(context.Background(), m, stale1.objects[name]); err != nil || !behind {
			t.Errorf("cacheBehind(%s) = %v, %v while %s is marked; want true", name, behind, err, marked[0])
		}
	}
	f.finish(t, marked[0])
	if _, err := r.reconcileServers(context.Background(), f.cluster, f.kcp, true, stale2); err != nil {
		t.Fatal(err)
	}
	for _, name := range f.marked(t) {
		if name == marked[0] {
			t.Errorf("a pass on a cache from before %s's update updated it again", name)
		}
	}
	if f.rc.callCount() != 1 {
		t.Errorf("the extension was asked %d times, want once: the stale pass waits before asking", f.rc.callCount())
	}
}

// A covered KThreesConfig change is written to the server's config in place.
func TestInPlaceWritesTheConfig(t *testing.T) {
	rc := coversVersion()
	rc.answer = func(req *runtimehooksv1.CanUpdateMachineRequest) (*runtimehooksv1.CanUpdateMachineResponse, error) {
		var desired struct {
			Spec json.RawMessage `json:"spec"`
		}
		if err := json.Unmarshal(req.Desired.BootstrapConfig.Raw, &desired); err != nil {
			return nil, err
		}
		return &runtimehooksv1.CanUpdateMachineResponse{
			CommonResponse:       runtimehooksv1.CommonResponse{Status: runtimehooksv1.ResponseStatusSuccess},
			BootstrapConfigPatch: runtimehooksv1.Patch{PatchType: runtimehooksv1.JSONMergePatchType, Patch: []byte(`{"spec":` + string(desired.Spec) + `}`)},
		}, nil
	}
	f := newInPlaceFixture(t, 3, 0, rc)
	f.kcp.Spec.KThreesConfigSpec.ServerConfig.DisableComponents = []string{"metrics-server"}
	f.pass(t) // marks the servers outdated
	f.pass(t)
	marked := f.marked(t)
	if len(marked) != 1 {
		t.Fatalf("%v marked, want one server", marked)
	}
	config := &bootstrapv1.KThreesConfig{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.kcp.Namespace, Name: marked[0]}, config); err != nil {
		t.Fatal(err)
	}
	if got := config.Spec.ServerConfig.DisableComponents; len(got) != 1 || got[0] != "metrics-server" {
		t.Errorf("config %s disables %v, want [metrics-server]", marked[0], got)
	}
}

// Until the Runtime SDK client has loaded the ExtensionConfigs (right after a start),
// the rollout waits rather than replace a server an extension might update.
func TestInPlaceWaitsForTheRuntimeClient(t *testing.T) {
	rc := coversVersion()
	rc.notReady = true
	f := newInPlaceFixture(t, 3, 0, rc)
	f.kcp.Spec.Version = upgradeVersion
	r := f.reconciler()
	if _, err := r.reconcileServers(context.Background(), f.cluster, f.kcp, true, f.observe(t, r)); err == nil {
		t.Error("no error while the Runtime SDK client is not ready")
	}
	if n := len(f.servers(t)); n != 3 || rc.callCount() != 0 {
		t.Errorf("%d servers, %d calls while the client is not ready; want 3 and none", n, rc.callCount())
	}
}
