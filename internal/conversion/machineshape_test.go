package conversion

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// The machine naming template and the taints have no v1beta1 field: a control plane
// read and written back at v1beta1 (by a tool of cluster-api-k3s's time) keeps them.
func TestMachineNamingAndTaintsSurviveV1Beta1(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	hub := &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: "ns"},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Version: "v1.31.4+k3s1",
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Name: "cp"},
				Taints:            []clusterv1.MachineTaint{{Key: "dedicated", Value: "cp", Effect: "NoSchedule", Propagation: clusterv1.MachineTaintPropagationAlways}},
			}},
			MachineNaming: controlplanev1.MachineNamingSpec{Template: "{{ .cluster.name }}-server-{{ .random }}"},
		},
	}
	old := &controlplanev1beta1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneHubToV1Beta1(t.Context(), hub.DeepCopy(), old); err != nil {
		t.Fatal(err)
	}
	back := &controlplanev1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(t.Context(), old, back); err != nil {
		t.Fatal(err)
	}
	if back.Spec.MachineNaming != hub.Spec.MachineNaming {
		t.Errorf("machineNaming = %+v after v1beta1, want %+v", back.Spec.MachineNaming, hub.Spec.MachineNaming)
	}
	if !equality.Semantic.DeepEqual(back.Spec.MachineTemplate.Spec.Taints, hub.Spec.MachineTemplate.Spec.Taints) {
		t.Errorf("taints = %+v after v1beta1, want %+v", back.Spec.MachineTemplate.Spec.Taints, hub.Spec.MachineTemplate.Spec.Taints)
	}
}
