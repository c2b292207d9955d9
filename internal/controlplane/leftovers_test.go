package controlplane

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// interruptedScaleUp leaves what a manager killed during scaleUp leaves: the server's
// infrastructure machine and, when withConfig, its KThreesConfig, and no Machine.
func interruptedScaleUp(t *testing.T, r *Reconciler, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, name string, withConfig bool) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := r.createInfraMachine(ctx, cluster, kcp, name); err != nil {
		t.Fatal(err)
	}
	if withConfig {
		if err := env.Client.Create(ctx, desiredKThreesConfig(kcp, cluster, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// sweepFixture is a namespace with a control plane that clones servers from the
// generic infrastructure template, and a Reconciler that remembers its sweeps.
func sweepFixture(t *testing.T) (string, *clusterv1.Cluster, *controlplanev1.KThreesControlPlane, *Reconciler) {
	t.Helper()
	ns := env.NewNamespace(t)
	cluster, kcp := createStepTestCluster(t, ns, clusterv1.APIEndpoint{Host: "127.0.0.1", Port: 6443})
	createInfraTemplate(t, ns)
	return ns, cluster, kcp, &Reconciler{Client: env.Client, APIReader: env.Client, leftovers: newLeftoverSweeps()}
}

// failingMachineCreates makes the Reconciler's Machine creates fail, as an API server
// that refuses them would.
func failingMachineCreates(t *testing.T, r *Reconciler) {
	t.Helper()
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	r.Client = interceptor.NewClient(inner, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*clusterv1.Machine); ok {
				return errors.New("the API server refuses Machines")
			}
			return c.Create(ctx, obj, opts...)
		},
	})
}

func exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return obj.GetDeletionTimestamp().IsZero()
}

func infraMachine(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(builder.InfrastructureGroupVersion.WithKind(builder.GenericInfrastructureMachineKind))
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func kthreesConfig(ns, name string) *bootstrapv1.KThreesConfig {
	c := &bootstrapv1.KThreesConfig{}
	c.Namespace, c.Name = ns, name
	return c
}

// A manager killed between a server's creates leaves its infrastructure machine and
// KThreesConfig owned by the control plane and by no Machine. The next process's first
// pass deletes them once they are old enough that no one can still be creating that
// server, and leaves every server that has its Machine alone.
func TestInterruptedServerCreatesAreSweptOnce(t *testing.T) {
	ctx := context.Background()
	ns, cluster, kcp, r := sweepFixture(t)

	if err := r.scaleUp(ctx, cluster, kcp, collections.New(), nil); err != nil {
		t.Fatal(err)
	}
	whole := listServers(t, ns)
	if len(whole) != 1 {
		t.Fatalf("%d Machines after one scale-up", len(whole))
	}
	interruptedScaleUp(t, r, cluster, kcp, "c1-cp-before-config", false)
	interruptedScaleUp(t, r, cluster, kcp, "c1-cp-before-machine", true)
	machines := collections.FromMachineList(&clusterv1.MachineList{Items: []clusterv1.Machine{*onlyOne(whole)}})

	// Young leftovers may be a create in flight elsewhere: nothing goes, and the pass
	// asks to come back when they are old enough.
	wait := r.sweepLeftovers(ctx, cluster, kcp, machines)
	if wait <= 0 || wait > leftoverGrace {
		t.Errorf("sweep of young leftovers asks to come back after %s, want within (0, %s]", wait, leftoverGrace)
	}
	for _, name := range []string{"c1-cp-before-config", "c1-cp-before-machine"} {
		if !exists(t, infraMachine(ns, name)) {
			t.Errorf("infrastructure machine %s was deleted before it was %s old", name, leftoverGrace)
		}
	}

	r.leftovers.grace = 0
	if wait := r.sweepLeftovers(ctx, cluster, kcp, machines); wait != 0 {
		t.Errorf("sweep asks to come back after %s with nothing young left", wait)
	}
	for _, name := range []string{"c1-cp-before-config", "c1-cp-before-machine"} {
		if exists(t, infraMachine(ns, name)) {
			t.Errorf("leftover infrastructure machine %s is still there", name)
		}
	}
	if exists(t, kthreesConfig(ns, "c1-cp-before-machine")) {
		t.Error("leftover KThreesConfig c1-cp-before-machine is still there")
	}
	for name := range whole {
		if !exists(t, infraMachine(ns, name)) || !exists(t, kthreesConfig(ns, name)) {
			t.Errorf("server %s, whose Machine exists, lost its infrastructure machine or KThreesConfig", name)
		}
	}

	// Swept once: a leftover that appears later (another process's, say) waits for the
	// next process or for a failed server create of this one.
	interruptedScaleUp(t, r, cluster, kcp, "c1-cp-later", true)
	r.sweepLeftovers(ctx, cluster, kcp, machines)
	if !exists(t, infraMachine(ns, "c1-cp-later")) {
		t.Error("a control plane already swept was swept again")
	}
	failingMachineCreates(t, r)
	if err := r.scaleUp(ctx, cluster, kcp, machines, nil); err == nil {
		t.Fatal("a scale-up whose Machine create failed reported no error")
	}
	r.sweepLeftovers(ctx, cluster, kcp, machines)
	if exists(t, infraMachine(ns, "c1-cp-later")) || exists(t, kthreesConfig(ns, "c1-cp-later")) {
		t.Error("a sweep asked for again left the later leftover")
	}
}

// What is not the control plane's to sweep stays: an infrastructure machine a Machine
// owns (CAPI's Machine controller adopted it) or one of another control plane, and a
// KThreesConfig a Machine owns beside an unowned infrastructure machine.
func TestSweepLeavesWhatIsNotALeftover(t *testing.T) {
	ctx := context.Background()
	ns, cluster, kcp, r := sweepFixture(t)
	r.leftovers.grace = 0

	interruptedScaleUp(t, r, cluster, kcp, "c1-cp-adopted", true)
	machineOwner := []map[string]any{{
		"apiVersion": clusterv1.GroupVersion.String(), "kind": "Machine", "name": "elsewhere", "uid": "0e0e0e0e-0000-4000-8000-000000000001",
	}}
	adopted := infraMachine(ns, "c1-cp-adopted")
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(adopted), adopted); err != nil {
		t.Fatal(err)
	}
	refs, _, _ := unstructured.NestedSlice(adopted.Object, "metadata", "ownerReferences")
	for _, o := range machineOwner {
		refs = append(refs, o)
	}
	if err := unstructured.SetNestedSlice(adopted.Object, refs, "metadata", "ownerReferences"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Update(ctx, adopted); err != nil {
		t.Fatal(err)
	}

	other := kcp.DeepCopy()
	other.UID = "0e0e0e0e-0000-4000-8000-000000000002"
	interruptedScaleUp(t, r, cluster, other, "c1-cp-of-another", false)

	if wait := r.sweepLeftovers(ctx, cluster, kcp, collections.New()); wait != 0 {
		t.Errorf("sweep asks to come back after %s", wait)
	}
	for _, name := range []string{"c1-cp-adopted", "c1-cp-of-another"} {
		if !exists(t, infraMachine(ns, name)) {
			t.Errorf("infrastructure machine %s, not this control plane's leftover, was deleted", name)
		}
	}
	if !exists(t, kthreesConfig(ns, "c1-cp-adopted")) {
		t.Error("the KThreesConfig of an adopted server was deleted")
	}
}

// The age of a candidate is read on the manager's clock alone. A manager whose clock runs
// an hour ahead of the API server's sees a server created a moment ago as an hour old
// by its creationTimestamp; it must still give that server leftoverGrace of its own
// time to get its Machine. One whose clock runs an hour behind must not wait an hour.
func TestSweepAgesLeftoversOnTheManagersClock(t *testing.T) {
	for _, skew := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			ctx := context.Background()
			ns, cluster, kcp, r := sweepFixture(t)
			clock := time.Now().Add(skew)
			r.leftovers.now = func() time.Time { return clock }
			interruptedScaleUp(t, r, cluster, kcp, "c1-cp-mid-create", true)

			wait := r.sweepLeftovers(ctx, cluster, kcp, collections.New())
			if !exists(t, infraMachine(ns, "c1-cp-mid-create")) || !exists(t, kthreesConfig(ns, "c1-cp-mid-create")) {
				t.Fatalf("a server created just now was deleted by a manager whose clock is %s off the API server's", skew)
			}
			if wait <= 0 || wait > leftoverGrace {
				t.Errorf("sweep of a young candidate asks to come back after %s, want within (0, %s]", wait, leftoverGrace)
			}

			clock = clock.Add(leftoverGrace - time.Second)
			if wait := r.sweepLeftovers(ctx, cluster, kcp, collections.New()); wait != time.Second {
				t.Errorf("a second before its grace ends, the sweep asks to come back after %s, want 1s", wait)
			}
			if !exists(t, infraMachine(ns, "c1-cp-mid-create")) {
				t.Fatal("a candidate was deleted before this process had seen it for leftoverGrace")
			}

			clock = clock.Add(time.Second)
			if wait := r.sweepLeftovers(ctx, cluster, kcp, collections.New()); wait != 0 {
				t.Errorf("sweep asks to come back after %s with nothing young left", wait)
			}
			if exists(t, infraMachine(ns, "c1-cp-mid-create")) || exists(t, kthreesConfig(ns, "c1-cp-mid-create")) {
				t.Error("a leftover this process has seen for leftoverGrace is still there")
			}
		})
	}
}

func onlyOne(m map[string]*clusterv1.Machine) *clusterv1.Machine {
	for _, v := range m {
		return v
	}
	return nil
}
