package conversion

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// The CA validity and the certificates status have no v1beta1 field: a control plane
// read and written back at v1beta1 keeps both.
func TestCertificateFieldsSurviveV1Beta1(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	expiry := metav1.NewTime(time.Date(2027, 3, 1, 10, 0, 0, 0, time.UTC))
	hub := &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: "ns"},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Version: "v1.36.3+k3s1",
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Name: "cp"},
			}},
			CACertificateValidityPeriodDays: 7300,
		},
		Status: controlplanev1.KThreesControlPlaneStatus{Certificates: &controlplanev1.CertificatesStatus{
			SoonestExpiry: &expiry, NodeName: "cp-abc", MachineName: "cp-abc", Certificate: "kubelet/client-kubelet.crt",
			Authorities: []controlplanev1.CertificateAuthorityStatus{{SecretName: "c-ca", NotAfter: expiry}},
		}},
	}
	old := &controlplanev1beta1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneHubToV1Beta1(t.Context(), hub.DeepCopy(), old); err != nil {
		t.Fatal(err)
	}
	back := &controlplanev1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(t.Context(), old, back); err != nil {
		t.Fatal(err)
	}
	if back.Spec.CACertificateValidityPeriodDays != 7300 {
		t.Errorf("caCertificateValidityPeriodDays = %d after v1beta1, want 7300", back.Spec.CACertificateValidityPeriodDays)
	}
	if !equality.Semantic.DeepEqual(back.Status.Certificates, hub.Status.Certificates) {
		t.Errorf("status.certificates = %+v after v1beta1, want %+v", back.Status.Certificates, hub.Status.Certificates)
	}
}
