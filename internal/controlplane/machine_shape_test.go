package controlplane

import (
	"context"
	"regexp"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
)

var dedicated = clusterv1.MachineTaint{Key: "example.com/dedicated", Value: "servers", Effect: "NoSchedule", Propagation: clusterv1.MachineTaintPropagationAlways}

// createInfraTemplate creates the generic infrastructure machine template "t" that the
// test control planes clone their servers from.
func createInfraTemplate(t *testing.T, ns string) {
	t.Helper()
	tmpl := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{}}}}}
	tmpl.SetGroupVersionKind(builder.InfrastructureGroupVersion.WithKind(builder.GenericInfrastructureMachineTemplateKind))
	tmpl.SetNamespace(ns)
	tmpl.SetName("t")
	if err := env.Client.Create(context.Background(), tmpl); err != nil {
		t.Fatal(err)
	}
}

// Every server the control plane creates is named by spec.machineNaming.template, and
// its KThreesConfig and infrastructure machine carry the same name; scale-up after
// scale-up the names stay unique.
func TestServersAreNamedFromTheTemplate(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster, kcp := createStepTestCluster(t, ns, clusterv1.APIEndpoint{Host: "127.0.0.1", Port: 6443})
	createInfraTemplate(t, ns)
	kcp.Spec.MachineNaming.Template = "{{ .cluster.name }}-server-{{ .random }}"
	kcp.Spec.MachineTemplate.Spec.Taints = []clusterv1.MachineTaint{dedicated}

	r := &Reconciler{Client: env.Client}
	pattern := regexp.MustCompile(`^c1-server-[a-z0-9]{5}$`)
	const servers = 5
	for range servers {
		if err := r.scaleUp(ctx, cluster, kcp, collections.New(), nil); err != nil {
			t.Fatal(err)
		}
	}
	machines := listServers(t, ns)
	if len(machines) != servers {
		t.Fatalf("%d Machines %v after %d scale-ups, want %d with distinct names", len(machines), keysOf(machines), servers, servers)
	}
	for name, m := range machines {
		if !pattern.MatchString(name) {
			t.Errorf("Machine %q does not follow the template %q", name, kcp.Spec.MachineNaming.Template)
		}
		if m.Spec.Bootstrap.ConfigRef.Name != name || m.Spec.InfrastructureRef.Name != name {
			t.Errorf("Machine %s refers to config %q and infrastructure %q, want its own name for both",
				name, m.Spec.Bootstrap.ConfigRef.Name, m.Spec.InfrastructureRef.Name)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &bootstrapv1.KThreesConfig{}); err != nil {
			t.Errorf("KThreesConfig %s: %v", name, err)
		}
		if !equality.Semantic.DeepEqual(m.Spec.Taints, []clusterv1.MachineTaint{dedicated}) {
			t.Errorf("Machine %s taints %+v, want the template's %+v", name, m.Spec.Taints, dedicated)
		}
	}
}

// shapedControlPlane makes a Cluster whose endpoint nobody serves and a control
// plane of one server that names it by template and taints it. The manager creates
// that first server (nothing is checked before the first one).
func shapedControlPlane(t *testing.T) *controlplanev1.KThreesControlPlane {
	t.Helper()
	ctx := context.Background()
	ns := env.NewNamespace(t)
	createInfraTemplate(t, ns)
	port, err := envtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cluster, kcp := createStepTestCluster(t, ns, clusterv1.APIEndpoint{Host: "127.0.0.1", Port: int32(port)})
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	if err := env.Client.Status().Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	before := kcp.DeepCopy()
	kcp.Spec.MachineNaming.Template = "{{ .kthreesControlPlane.name }}-first-{{ .random }}"
	kcp.Spec.MachineTemplate.Spec.Taints = []clusterv1.MachineTaint{dedicated}
	if err := controllerutil.SetOwnerReference(cluster, kcp, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Patch(ctx, kcp, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	return kcp
}

// waitForServer waits until the control plane has exactly one server that satisfies
// ok, and returns it.
func waitForServer(t *testing.T, kcp *controlplanev1.KThreesControlPlane, what string, ok func(*clusterv1.Machine) bool) *clusterv1.Machine {
	t.Helper()
	var servers map[string]*clusterv1.Machine
	var only *clusterv1.Machine
	err := envtest.Eventually(context.Background(), 30*time.Second, func(context.Context) (bool, error) {
		servers, only = listServers(t, kcp.Namespace), nil
		if len(servers) == 1 {
			only = servers[keysOf(servers)[0]]
		}
		return only != nil && ok(only), nil
	})
	if err != nil {
		t.Fatalf("never one server that %s: %v; servers %v", what, err, keysOf(servers))
	}
	return only
}

// Taints changed on the control plane reach the existing server in place, and a new
// naming template applies to new servers only: neither replaces the server.
func TestTaintsAndNamingChangeWithoutRollout(t *testing.T) {
	startManager(t)
	ctx := context.Background()
	kcp := shapedControlPlane(t)

	first := waitForServer(t, kcp, "carries the template's taint", func(m *clusterv1.Machine) bool {
		return equality.Semantic.DeepEqual(m.Spec.Taints, []clusterv1.MachineTaint{dedicated}) &&
			conditions.IsTrue(m, clusterv1.MachineUpToDateCondition)
	})
	if !regexp.MustCompile(`^c1-cp-first-[a-z0-9]{5}$`).MatchString(first.Name) {
		t.Errorf("first server %q does not follow the template", first.Name)
	}

	// A value changed, a taint added.
	changed := dedicated
	changed.Value = "etcd"
	added := clusterv1.MachineTaint{Key: "example.com/maintenance", Effect: "NoExecute", Propagation: clusterv1.MachineTaintPropagationOnInitialization}
	got := getKCP(t, kcp)
	before := got.DeepCopy()
	got.Spec.MachineTemplate.Spec.Taints = []clusterv1.MachineTaint{changed, added}
	if err := env.Client.Patch(ctx, got, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	m := waitForServer(t, kcp, "carries the changed taints", func(m *clusterv1.Machine) bool {
		return equality.Semantic.DeepEqual(m.Spec.Taints, []clusterv1.MachineTaint{changed, added})
	})
	checkSameServer(t, first, m)

	got = getKCP(t, kcp)
	before = got.DeepCopy()
	got.Spec.MachineNaming.Template = "{{ .cluster.name }}-renamed-{{ .random }}"
	if err := env.Client.Patch(ctx, got, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	// The pass that saw the new template wrote its generation; by then a rollout would
	// have begun (the first server of an uninitialized control plane needs no check).
	var seen *controlplanev1.KThreesControlPlane
	err := envtest.Eventually(ctx, 30*time.Second, func(context.Context) (bool, error) {
		seen = getKCP(t, kcp)
		return seen.Status.ObservedGeneration == seen.Generation && seen.Generation > before.Generation, nil
	})
	if err != nil {
		t.Fatalf("the control plane never observed the new template: %v", err)
	}
	if n := ptr.Deref(seen.Status.UpToDateReplicas, -1); n != 1 {
		t.Errorf("upToDateReplicas = %d after a naming change, want 1", n)
	}
	m = waitForServer(t, kcp, "is still up to date", func(m *clusterv1.Machine) bool {
		return conditions.IsTrue(m, clusterv1.MachineUpToDateCondition)
	})
	checkSameServer(t, first, m)
}

// checkSameServer fails unless now is the server first was, not a replacement.
func checkSameServer(t *testing.T, first, now *clusterv1.Machine) {
	t.Helper()
	if now.UID != first.UID || !now.DeletionTimestamp.IsZero() {
		t.Errorf("server %s (uid %s, deleting %v), want the first one %s (uid %s) kept", now.Name, now.UID, !now.DeletionTimestamp.IsZero(), first.Name, first.UID)
	}
	if c := conditions.Get(now, clusterv1.MachineUpToDateCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("server %s UpToDate = %+v, want True", now.Name, c)
	}
}
