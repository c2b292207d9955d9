package controlplane

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/statuspatch"
)

// writeCounts counts the writes a client sends, by kind of request.
type writeCounts struct{ patches, statusPatches int }

func countingWrites(t *testing.T, counts *writeCounts) client.Client {
	t.Helper()
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(inner, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			counts.patches++
			return c.Patch(ctx, obj, p, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			counts.statusPatches++
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
}

// newUnownedControlPlane creates a KThreesControlPlane no Cluster owns, which the
// package's manager, if running, leaves alone: only the test writes it.
func newUnownedControlPlane(t *testing.T) *controlplanev1.KThreesControlPlane {
	t.Helper()
	kcp := &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.NewNamespace(t), Name: "cp"},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Replicas: ptr.To[int32](1),
			Version:  "v1.31.4+k3s1",
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{
				Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineTemplateKind, Name: "t",
					},
				},
			},
		},
	}
	if err := env.Client.Create(context.Background(), kcp); err != nil {
		t.Fatal(err)
	}
	return kcp
}

func readControlPlane(t *testing.T, kcp *controlplanev1.KThreesControlPlane) *controlplanev1.KThreesControlPlane {
	t.Helper()
	got := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(kcp), got); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestAPassWritesItsStatusInOneRequest(t *testing.T) {
	created := newUnownedControlPlane(t)
	ctx := context.Background()

	kcp := readControlPlane(t, created)
	pass := statuspatch.New(kcp)
	kcp.Finalizers = append(kcp.Finalizers, controlplanev1.KThreesControlPlaneFinalizer)
	conditions.Set(kcp, metav1.Condition{Type: controlplanev1.AvailableCondition, Status: metav1.ConditionFalse, Reason: controlplanev1.NotAvailableReason, Message: "not yet"})
	kcp.Status.Replicas = ptr.To[int32](1)
	kcp.Status.Version = "v1.31.4+k3s1"
	var counts writeCounts
	replaced, err := pass.Write(ctx, countingWrites(t, &counts), kcp)
	if err != nil {
		t.Fatal(err)
	}
	if counts != (writeCounts{patches: 1, statusPatches: 1}) {
		t.Fatalf("a pass that changed the finalizers, a condition and two status fields sent %+v, want one patch and one status patch", counts)
	}
	stored := readControlPlane(t, created)
	// The pass replaced the version it read and the one its metadata write made.
	if len(replaced) != 2 || replaced[0] != created.ResourceVersion || replaced[1] == stored.ResourceVersion {
		t.Fatalf("replaced versions %v; read %s, stored now %s", replaced, created.ResourceVersion, stored.ResourceVersion)
	}
	if len(stored.Finalizers) != 1 || ptr.Deref(stored.Status.Replicas, 0) != 1 || stored.Status.Version != "v1.31.4+k3s1" ||
		!conditions.IsFalse(stored, controlplanev1.AvailableCondition) {
		t.Fatalf("stored: finalizers %v, replicas %v, version %q, conditions %+v", stored.Finalizers, stored.Status.Replicas, stored.Status.Version, stored.Status.Conditions)
	}

	// Nothing changed: nothing is sent.
	counts = writeCounts{}
	replaced, err = statuspatch.New(stored).Write(ctx, countingWrites(t, &counts), stored.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if counts != (writeCounts{}) || len(replaced) != 0 {
		t.Fatalf("a pass that changed nothing sent %+v", counts)
	}

	// Only the status changed: one status patch.
	kcp = readControlPlane(t, created)
	pass = statuspatch.New(kcp)
	kcp.Status.ReadyReplicas = ptr.To[int32](1)
	counts = writeCounts{}
	if _, err := pass.Write(ctx, countingWrites(t, &counts), kcp); err != nil {
		t.Fatal(err)
	}
	if counts != (writeCounts{statusPatches: 1}) {
		t.Fatalf("a pass that changed one status field sent %+v", counts)
	}
}

// A pass computed from a read that has since been overtaken must not write its older
// view over the newer status; the newer write has queued another pass.
func TestAPassFromAStaleReadDoesNotOverwriteANewerStatus(t *testing.T) {
	created := newUnownedControlPlane(t)
	ctx := context.Background()

	stale := readControlPlane(t, created)
	newer := stale.DeepCopy()
	newer.Status.Version = "v1.32.1+k3s1"
	if err := env.Client.Status().Patch(ctx, newer, client.MergeFrom(stale)); err != nil {
		t.Fatal(err)
	}

	pass := statuspatch.New(stale)
	stale.Status.Version = "v1.31.4+k3s1"
	if _, err := pass.Write(ctx, env.Client, stale); err != nil {
		t.Fatalf("a conflicting status write is the next pass's to redo, not an error: %v", err)
	}
	if got := readControlPlane(t, created).Status.Version; got != "v1.32.1+k3s1" {
		t.Fatalf("stored version %q: the stale pass overwrote the newer status", got)
	}
}
