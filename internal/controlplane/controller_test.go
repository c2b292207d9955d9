package controlplane

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/envtest"
)

// newClusterWithControlPlane creates a Cluster and its KThreesControlPlane, owned by
// the Cluster as CAPI's Cluster controller would make it.
func newClusterWithControlPlane(t *testing.T, ns string, paused bool) (*clusterv1.Cluster, *controlplanev1.KThreesControlPlane) {
	t.Helper()
	ctx := context.Background()
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"},
		Spec: clusterv1.ClusterSpec{
			Paused: ptr.To(paused),
			ControlPlaneRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: controlplanev1.GroupVersion.Group, Kind: "KThreesControlPlane", Name: "c1-cp",
			},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureClusterKind, Name: "c1",
			},
		},
	}
	if err := env.Client.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	// The infrastructure is ready but has no endpoint yet: the control plane gets as
	// far as certificates and the token, and creates no machine.
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	if err := env.Client.Status().Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	kcp := &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1-cp",
			Labels: map[string]string{clusterv1.ClusterNameLabel: "c1"}},
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
	if err := controllerutil.SetOwnerReference(cluster, kcp, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, kcp); err != nil {
		t.Fatal(err)
	}
	return cluster, kcp
}

func waitForCondition(t *testing.T, kcp *controlplanev1.KThreesControlPlane, conditionType string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	var last *metav1.Condition
	err := envtest.Eventually(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
		got := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kcp), got); err != nil {
			return false, err
		}
		last = conditions.Get(got, conditionType)
		return last != nil && last.Status == status && last.Reason == reason, nil
	})
	if err != nil {
		t.Fatalf("condition %s never became %s/%s; last: %+v", conditionType, status, reason, last)
	}
}

func TestControlPlaneCreatesAndOwnsTheToken(t *testing.T) {
	startManager(t)
	ns := env.NewNamespace(t)
	cluster, kcp := newClusterWithControlPlane(t, ns, false)

	waitForCondition(t, kcp, controlplanev1.TokenAvailableCondition, metav1.ConditionTrue, controlplanev1.TokenAvailableReason)

	secret := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: token.SecretName(cluster.Name)}, secret); err != nil {
		t.Fatalf("token Secret: %v", err)
	}
	ctrlRef := metav1.GetControllerOf(secret)
	if ctrlRef == nil || ctrlRef.Kind != "KThreesControlPlane" || ctrlRef.Name != kcp.Name {
		t.Errorf("token Secret controller = %+v, want the KThreesControlPlane", ctrlRef)
	}
	if len(secret.Data[token.ServerKey]) == 0 || len(secret.Data[token.AgentKey]) == 0 {
		t.Errorf("token Secret lacks a server or agent passphrase: keys %v", keys(secret.Data))
	}
}

func TestPausedControlPlaneDoesNothing(t *testing.T) {
	startManager(t)
	ns := env.NewNamespace(t)
	cluster, kcp := newClusterWithControlPlane(t, ns, true)

	waitForCondition(t, kcp, clusterv1.PausedCondition, metav1.ConditionTrue, clusterv1.PausedReason)
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: token.SecretName(cluster.Name)}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a paused control plane touched the token Secret (Get = %v)", err)
	}
}

// A token deleted after initialization must not be replaced by a random one: the
// deletion wakes the control plane (watch on owned Secrets), which reports it lost.
func TestTokenLostAfterInitializationIsReportedNotRegenerated(t *testing.T) {
	startManager(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster, kcp := newClusterWithControlPlane(t, ns, false)
	waitForCondition(t, kcp, controlplanev1.TokenAvailableCondition, metav1.ConditionTrue, controlplanev1.TokenAvailableReason)

	got := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kcp), got); err != nil {
		t.Fatal(err)
	}
	// A merge patch without resourceVersion: the controller writes status concurrently.
	before := got.DeepCopy()
	got.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	if err := env.Client.Status().Patch(ctx, got, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: token.SecretName(cluster.Name)}}
	if err := env.Client.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}

	waitForCondition(t, kcp, controlplanev1.TokenAvailableCondition, metav1.ConditionFalse, controlplanev1.TokenLostReason)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("a new token Secret was made after initialization (Get = %v)", err)
	}
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
