package conversion

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// rollout.before.certificatesExpiryDays has no v1beta1 field: a control plane read and
// written back at v1beta1, also with an edit there, keeps it.
func TestRolloutBeforeSurvivesV1Beta1(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	hub := &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: "ns"},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Version: "v1.31.4+k3s1",
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Name: "cp"},
			}},
			Rollout: controlplanev1.ControlPlaneRolloutSpec{Before: controlplanev1.ControlPlaneRolloutBeforeSpec{CertificatesExpiryDays: 45}},
		},
	}
	old := &controlplanev1beta1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneHubToV1Beta1(t.Context(), hub.DeepCopy(), old); err != nil {
		t.Fatal(err)
	}
	// A v1beta1 client edits what it knows of.
	old.Spec.UpgradeAfter = &metav1.Time{Time: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	back := &controlplanev1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(t.Context(), old, back); err != nil {
		t.Fatal(err)
	}
	if back.Spec.Rollout.Before != hub.Spec.Rollout.Before {
		t.Errorf("rollout.before = %+v after v1beta1, want %+v", back.Spec.Rollout.Before, hub.Spec.Rollout.Before)
	}
	if back.Spec.RolloutAfter == nil || !back.Spec.RolloutAfter.Equal(old.Spec.UpgradeAfter) {
		t.Errorf("rolloutAfter = %v, want the v1beta1 edit", back.Spec.RolloutAfter)
	}
}
