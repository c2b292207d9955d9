package cpfixtures

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// DecisionKCP is an initialized control plane of replicas servers, as a scaling or
// rollout pass sees it; surge, when set, is its rolling update's maxSurge.
func DecisionKCP(replicas int32, surge *int) *controlplanev1.KThreesControlPlane {
	kcp := &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: "cp"},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Replicas: ptr.To(replicas),
			Version:  "v1.31.4+k3s1",
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Name: "v2"},
			}},
			KThreesConfigSpec: bootstrapv1.KThreesConfigSpec{ServerConfig: bootstrapv1.KThreesServerConfig{DisableComponents: []string{"traefik"}}},
		},
		Status: controlplanev1.KThreesControlPlaneStatus{Initialization: controlplanev1.KThreesControlPlaneInitializationStatus{ControlPlaneInitialized: ptr.To(true)}},
	}
	if surge != nil {
		kcp.Spec.RolloutStrategy = &controlplanev1.RolloutStrategy{RollingUpdate: &controlplanev1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt(*surge))}}
	}
	return kcp
}

// OnDatastore puts the control plane on an external datastore (no etcd members).
func OnDatastore(kcp *controlplanev1.KThreesControlPlane) *controlplanev1.KThreesControlPlane {
	kcp.Spec.KThreesConfigSpec.ServerConfig.Datastore = &bootstrapv1.Datastore{
		EndpointSecret: bootstrapv1.SecretKeyReference{Name: "pg", Key: "endpoint"},
	}
	return kcp
}

// RemediationKCP is a bare control plane of replicas servers with a remediation
// strategy (nil: the defaults), initialized or not.
func RemediationKCP(initialized bool, replicas int32, strategy *controlplanev1.RemediationStrategy) *controlplanev1.KThreesControlPlane {
	kcp := &controlplanev1.KThreesControlPlane{}
	kcp.Spec.Replicas = ptr.To(replicas)
	kcp.Spec.RemediationStrategy = strategy
	if initialized {
		kcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	}
	return kcp
}
