package controlplane

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"
	"github.com/capk3s/capk3s/test/envtest"
)

// unreachableControlPlane makes a Cluster whose endpoint nobody serves and a
// KThreesControlPlane of three servers that it adopts, one of them at an older
// version. The servers' Machines carry the conditions CAPI's Machine controller
// gives them: a and c Ready and Available, b's Ready Unknown. The control plane is
// initialized, so its workload cluster should be reachable, and is not.
func unreachableControlPlane(t *testing.T) *controlplanev1.KThreesControlPlane {
	t.Helper()
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster, kcp := newClusterWithControlPlane(t, ns, false)
	waitForCondition(t, kcp, controlplanev1.TokenAvailableCondition, metav1.ConditionTrue, controlplanev1.TokenAvailableReason)

	for _, name := range []string{"a", "b", "c"} {
		version := "v1.31.4+k3s1"
		if name == "a" {
			version = "v1.30.9+k3s1"
		}
		m := &clusterv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
				clusterv1.ClusterNameLabel: cluster.Name, clusterv1.MachineControlPlaneLabel: "",
			}},
			Spec: clusterv1.MachineSpec{
				ClusterName: cluster.Name, Version: version,
				Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To(name)},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineKind, Name: name,
				},
			},
		}
		if err := env.Client.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		ready := metav1.ConditionTrue
		if name == "b" {
			ready = metav1.ConditionUnknown
		}
		for _, c := range []metav1.Condition{
			{Type: clusterv1.MachineReadyCondition, Status: ready, Reason: "Test"},
			{Type: clusterv1.MachineAvailableCondition, Status: ready, Reason: "Test"},
		} {
			c.LastTransitionTime = metav1.Now()
			m.Status.Conditions = append(m.Status.Conditions, c)
		}
		if err := env.Client.Status().Update(ctx, m); err != nil {
			t.Fatal(err)
		}
	}

	port, err := envtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	before := cluster.DeepCopy()
	cluster.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "127.0.0.1", Port: int32(port)}
	if err := env.Client.Patch(ctx, cluster, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	// Replicas first: a control plane of one that adopts three servers would scale down.
	got := getKCP(t, kcp)
	specBefore := got.DeepCopy()
	got.Spec.Replicas = ptr.To[int32](3)
	if err := env.Client.Patch(ctx, got, client.MergeFrom(specBefore)); err != nil {
		t.Fatal(err)
	}
	statusBefore := got.DeepCopy()
	got.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	if err := env.Client.Status().Patch(ctx, got, client.MergeFrom(statusBefore)); err != nil {
		t.Fatal(err)
	}
	return got
}

func getKCP(t *testing.T, kcp *controlplanev1.KThreesControlPlane) *controlplanev1.KThreesControlPlane {
	t.Helper()
	got := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(kcp), got); err != nil {
		t.Fatal(err)
	}
	return got
}

func listServers(t *testing.T, ns string) map[string]*clusterv1.Machine {
	t.Helper()
	list := &clusterv1.MachineList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]*clusterv1.Machine{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// A control plane whose workload cluster cannot be reached reports what its Machines
// say and Unknown for what only the workload cluster could tell; it takes no step.
func TestUnreachableWorkloadClusterIsUnknownNotAnOutage(t *testing.T) {
	startManager(t)
	kcp := unreachableControlPlane(t)

	var got *controlplanev1.KThreesControlPlane
	err := envtest.Eventually(context.Background(), 30*time.Second, func(context.Context) (bool, error) {
		got = getKCP(t, kcp)
		// The first passes may predate the initialized status the test wrote; wait for
		// one that saw it.
		available := conditions.Get(got, controlplanev1.AvailableCondition)
		return ptr.Deref(got.Status.Replicas, 0) == 3 && conditions.Has(got, controlplanev1.RollingOutCondition) &&
			available != nil && !strings.Contains(available.Message, "not initialized"), nil
	})
	if err != nil {
		t.Fatalf("the control plane never counted its servers: %v; status %+v", err, got.Status)
	}
	if r, a := ptr.Deref(got.Status.ReadyReplicas, -1), ptr.Deref(got.Status.AvailableReplicas, -1); r != 2 || a != 2 {
		t.Errorf("ready/available = %d/%d, want 2/2 as the Machines' conditions say", r, a)
	}
	for _, ct := range []string{controlplanev1.AvailableCondition, controlplanev1.EtcdClusterHealthyCondition} {
		if c := conditions.Get(got, ct); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != controlplanev1.WorkloadClusterUnreachableReason {
			t.Errorf("%s = %+v, want Unknown/%s", ct, c, controlplanev1.WorkloadClusterUnreachableReason)
		}
	}
	if c := conditions.Get(got, controlplanev1.MachinesReadyCondition); c == nil || c.Status != metav1.ConditionUnknown {
		t.Errorf("MachinesReady = %+v, want Unknown (b's Ready is Unknown, a and c are Ready)", c)
	}
	// a is outdated; the pass that wrote this status decided, on the same data, to wait.
	if c := conditions.Get(got, controlplanev1.RollingOutCondition); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, serverplan.BlockedUnreachable) {
		t.Errorf("RollingOut = %+v, want True, waiting for the workload cluster", c)
	}
	servers := listServers(t, got.Namespace)
	if len(servers) != 3 {
		t.Errorf("servers %v, want a, b and c alone: no step while the workload cluster is unreachable", keysOf(servers))
	}
	for name, m := range servers {
		if !m.DeletionTimestamp.IsZero() {
			t.Errorf("server %s is being deleted while the workload cluster is unreachable", name)
		}
	}
}

// The control plane keeps each server's UpToDate condition (the Cluster's
// ControlPlaneMachinesUpToDate reads it), counts it, reports the versions the servers
// run, and sets minReadySeconds on existing Machines without replacing them.
func TestMachinesGetUpToDateAndMinReadySecondsInPlace(t *testing.T) {
	startManager(t)
	ctx := context.Background()
	kcp := unreachableControlPlane(t)

	var servers map[string]*clusterv1.Machine
	err := envtest.Eventually(ctx, 30*time.Second, func(context.Context) (bool, error) {
		servers = listServers(t, kcp.Namespace)
		for _, m := range servers {
			if !conditions.Has(m, clusterv1.MachineUpToDateCondition) {
				return false, nil
			}
		}
		return len(servers) == 3, nil
	})
	if err != nil {
		t.Fatalf("the servers never got UpToDate: %v", err)
	}
	if c := conditions.Get(servers["a"], clusterv1.MachineUpToDateCondition); c.Status != metav1.ConditionFalse ||
		c.Reason != clusterv1.MachineNotUpToDateReason || !strings.Contains(c.Message, "v1.30.9+k3s1") {
		t.Errorf("a's UpToDate = %+v, want False naming its old version", c)
	}
	for _, name := range []string{"b", "c"} {
		if !conditions.IsTrue(servers[name], clusterv1.MachineUpToDateCondition) {
			t.Errorf("%s's UpToDate = %+v, want True", name, conditions.Get(servers[name], clusterv1.MachineUpToDateCondition))
		}
	}
	var got *controlplanev1.KThreesControlPlane
	err = envtest.Eventually(ctx, 30*time.Second, func(context.Context) (bool, error) {
		got = getKCP(t, kcp)
		return ptr.Deref(got.Status.UpToDateReplicas, -1) == 2 && len(got.Status.Versions) == 2, nil
	})
	if err != nil {
		t.Fatalf("upToDateReplicas/versions never reported: %v; status %+v", err, got.Status)
	}
	if v := got.Status.Versions; v[0] != (clusterv1.StatusVersion{Version: "v1.30.9+k3s1", Replicas: 1}) ||
		v[1] != (clusterv1.StatusVersion{Version: "v1.31.4+k3s1", Replicas: 2}) || got.Status.Version != "v1.30.9+k3s1" {
		t.Errorf("versions %v version %q, want the oldest first", v, got.Status.Version)
	}

	before := got.DeepCopy()
	got.Spec.MachineTemplate.Spec.MinReadySeconds = ptr.To[int32](30)
	if err := env.Client.Patch(ctx, got, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	err = envtest.Eventually(ctx, 30*time.Second, func(context.Context) (bool, error) {
		servers = listServers(t, kcp.Namespace)
		for _, m := range servers {
			if ptr.Deref(m.Spec.MinReadySeconds, 0) != 30 {
				return false, nil
			}
		}
		return len(servers) == 3, nil
	})
	if err != nil {
		t.Fatalf("minReadySeconds never reached the servers: %v", err)
	}
	if got := keysOf(servers); fmt.Sprint(got) != "[a b c]" {
		t.Errorf("servers %v after a minReadySeconds change, want the same a, b and c", got)
	}
}

func keysOf(m map[string]*clusterv1.Machine) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return sorted(out)
}
