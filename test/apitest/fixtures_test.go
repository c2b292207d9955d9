package apitest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/test/builder"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

func newCluster(ns, name string) *clusterv1.Cluster {
	return &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clusterv1.ClusterSpec{
			ControlPlaneRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: controlplanev1.GroupVersion.Group,
				Kind:     "KThreesControlPlane",
				Name:     name + "-control-plane",
			},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: builder.InfrastructureGroupVersion.Group,
				Kind:     builder.GenericInfrastructureClusterKind,
				Name:     name,
			},
		},
	}
}

func newControlPlane(ns, name string) *controlplanev1.KThreesControlPlane {
	return &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{clusterv1.ClusterNameLabel: "c1"}},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Replicas: ptr.To[int32](1),
			Version:  "v1.31.4+k3s1",
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{
				Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: builder.InfrastructureGroupVersion.Group,
						Kind:     builder.GenericInfrastructureMachineTemplateKind,
						Name:     name,
					},
				},
			},
			KThreesConfigSpec: bootstrapv1.KThreesConfigSpec{
				ServerConfig: bootstrapv1.KThreesServerConfig{DisableComponents: []string{"traefik"}},
			},
		},
	}
}

func newConfig(ns, name string) *bootstrapv1.KThreesConfig {
	return &bootstrapv1.KThreesConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: bootstrapv1.KThreesConfigSpec{
			Version: "v1.31.4+k3s1",
			Files: []bootstrapv1.File{{
				Path: "/etc/motd", Owner: "root:root", Permissions: "0644",
				Encoding: bootstrapv1.Base64, Content: "aGVsbG8=",
			}},
			PreK3sCommands:  []string{"echo pre"},
			PostK3sCommands: []string{"echo post"},
			AgentConfig: bootstrapv1.KThreesAgentConfig{
				NodeLabels: []string{"role=worker"},
				Registries: &bootstrapv1.Registries{
					Mirrors: []bootstrapv1.RegistryMirror{{Registry: "docker.io", Endpoints: []string{"https://mirror.example"}}},
				},
			},
		},
	}
}
