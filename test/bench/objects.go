package main

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	kubeadmbootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	infrav1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// shape is what every cluster of a run looks like.
type shape struct {
	Servers int32
	Agents  int32
	// Delays the in-memory backend waits before each step of a machine's boot: the
	// VM, the Node (kubelet), etcd and the API server.
	VMDelay, NodeDelay, EtcdDelay, APIServerDelay time.Duration
}

// Kubernetes versions of a run, and the versions the fleet upgrade moves every cluster
// to: a patch release up for both providers, the upgrade a platform team runs every
// month. k3s's version carries its own build suffix.
const (
	k3sVersion            = "v1.36.1+k3s1"
	k3sUpgradeVersion     = "v1.36.3+k3s1"
	kubeadmVersion        = "v1.32.1"
	kubeadmUpgradeVersion = "v1.32.2"
)

// upgradeVersion is the version p's clusters are upgraded to.
func upgradeVersion(p provider) string {
	if p == providerKCP {
		return kubeadmUpgradeVersion
	}
	return k3sUpgradeVersion
}

// The harness runs no admission webhooks, so objects are created as each project's
// defaulting webhook would store them where a controller relies on a default: a
// rolling update with one machine of surge. CAPI's MachineDeployment controller
// refuses a MachineDeployment without a strategy type ("unexpected deployment strategy
// type"), so without this no agent was ever made. capk3s's controller follows the same
// default without its webhook; it is written out for it too, so that both providers'
// objects say the same.
var (
	surgeOne        = intstr.FromInt32(1)
	unavailableNone = intstr.FromInt32(0)
)

// clusterObjects are the objects that make one cluster of provider p, in creation
// order (the Cluster last, so that everything it references exists).
func clusterObjects(p provider, namespace, name string, s shape) []client.Object {
	meta := func(n string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: namespace, Name: n, Labels: map[string]string{clusterv1.ClusterNameLabel: name}}
	}
	infraRef := func(kind, n string) clusterv1.ContractVersionedObjectReference {
		return clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: kind, Name: n}
	}
	devCluster := meta(name)
	// The backend records its listener in this annotation and assumes the map exists.
	devCluster.Annotations = map[string]string{infrav1.ListenerAnnotationName: namespace + "/" + name}
	objs := []client.Object{
		&infrav1.DevCluster{ObjectMeta: devCluster, Spec: infrav1.DevClusterSpec{
			Backend: infrav1.DevClusterBackendSpec{InMemory: &infrav1.InMemoryClusterBackendSpec{}},
		}},
		devMachineTemplate(meta(name+"-servers"), s),
	}
	var controlPlane client.Object
	var cpRef clusterv1.ContractVersionedObjectReference
	serversRef := infraRef("DevMachineTemplate", name+"-servers")
	switch p {
	case providerCapk3s:
		controlPlane = &controlplanev1.KThreesControlPlane{ObjectMeta: meta(name), Spec: controlplanev1.KThreesControlPlaneSpec{
			Replicas: ptr.To(s.Servers),
			Version:  k3sVersion,
			RolloutStrategy: &controlplanev1.RolloutStrategy{
				Type:          controlplanev1.RollingUpdateStrategyType,
				RollingUpdate: &controlplanev1.RollingUpdate{MaxSurge: &surgeOne},
				// The snapshot before a rollout goes through k3s's supervisor API on a
				// server, which the in-memory machines do not serve: with it on, every
				// rollout would wait for a snapshot that never completes. The kubeadm
				// side takes none either, so both replace the same servers the same way.
				EtcdSnapshot: controlplanev1.EtcdSnapshotBeforeRolloutDisabled,
			},
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{
				Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{InfrastructureRef: serversRef},
			},
		}}
		cpRef = clusterv1.ContractVersionedObjectReference{APIGroup: controlplanev1.GroupVersion.Group, Kind: "KThreesControlPlane", Name: name}
	case providerKCP:
		controlPlane = &kubeadmcontrolplanev1.KubeadmControlPlane{ObjectMeta: meta(name), Spec: kubeadmcontrolplanev1.KubeadmControlPlaneSpec{
			Replicas: ptr.To(s.Servers),
			Version:  kubeadmVersion,
			Rollout: kubeadmcontrolplanev1.KubeadmControlPlaneRolloutSpec{Strategy: kubeadmcontrolplanev1.KubeadmControlPlaneRolloutStrategy{
				Type:          kubeadmcontrolplanev1.RollingUpdateStrategyType,
				RollingUpdate: kubeadmcontrolplanev1.KubeadmControlPlaneRolloutStrategyRollingUpdate{MaxSurge: &surgeOne},
			}},
			MachineTemplate: kubeadmcontrolplanev1.KubeadmControlPlaneMachineTemplate{
				Spec: kubeadmcontrolplanev1.KubeadmControlPlaneMachineTemplateSpec{InfrastructureRef: serversRef},
			},
		}}
		cpRef = clusterv1.ContractVersionedObjectReference{APIGroup: kubeadmcontrolplanev1.GroupVersion.Group, Kind: "KubeadmControlPlane", Name: name}
	}
	objs = append(objs, controlPlane)
	if s.Agents > 0 {
		objs = append(objs, agentObjects(p, meta, name, s)...)
	}
	return append(objs, &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: clusterv1.ClusterSpec{
			InfrastructureRef: infraRef("DevCluster", name),
			ControlPlaneRef:   cpRef,
		},
	})
}

// agentObjects are a MachineDeployment of s.Agents workers with its templates.
func agentObjects(p provider, meta func(string) metav1.ObjectMeta, name string, s shape) []client.Object {
	agents := name + "-agents"
	var config client.Object
	var configRef clusterv1.ContractVersionedObjectReference
	version := k3sVersion
	switch p {
	case providerCapk3s:
		config = &bootstrapv1.KThreesConfigTemplate{ObjectMeta: meta(agents)}
		configRef = clusterv1.ContractVersionedObjectReference{APIGroup: bootstrapv1.GroupVersion.Group, Kind: "KThreesConfigTemplate", Name: agents}
	case providerKCP:
		config = &kubeadmbootstrapv1.KubeadmConfigTemplate{ObjectMeta: meta(agents)}
		configRef = clusterv1.ContractVersionedObjectReference{APIGroup: kubeadmbootstrapv1.GroupVersion.Group, Kind: "KubeadmConfigTemplate", Name: agents}
		version = kubeadmVersion
	}
	selector := map[string]string{clusterv1.ClusterNameLabel: name, "bench.capk3s.io/pool": "agents"}
	md := &clusterv1.MachineDeployment{
		ObjectMeta: meta(agents),
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: name,
			Replicas:    ptr.To(s.Agents),
			Selector:    metav1.LabelSelector{MatchLabels: selector},
			Rollout: clusterv1.MachineDeploymentRolloutSpec{Strategy: clusterv1.MachineDeploymentRolloutStrategy{
				Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{
					MaxSurge: &surgeOne, MaxUnavailable: &unavailableNone,
				},
			}},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: selector},
				Spec: clusterv1.MachineSpec{
					ClusterName:       name,
					Version:           version,
					Bootstrap:         clusterv1.Bootstrap{ConfigRef: configRef},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "DevMachineTemplate", Name: agents},
				},
			},
		},
	}
	return []client.Object{devMachineTemplate(meta(agents), s), config, md}
}

func devMachineTemplate(meta metav1.ObjectMeta, s shape) *infrav1.DevMachineTemplate {
	step := func(d time.Duration) infrav1.CommonProvisioningSettings {
		return infrav1.CommonProvisioningSettings{StartupDuration: metav1.Duration{Duration: d}, StartupJitter: "0.2"}
	}
	return &infrav1.DevMachineTemplate{ObjectMeta: meta, Spec: infrav1.DevMachineTemplateSpec{
		Template: infrav1.DevMachineTemplateResource{Spec: infrav1.DevMachineSpec{Backend: infrav1.DevMachineBackendSpec{
			InMemory: &infrav1.InMemoryMachineBackendSpec{
				VM:        &infrav1.InMemoryVMSpec{Provisioning: step(s.VMDelay)},
				Node:      &infrav1.InMemoryNodeSpec{Provisioning: step(s.NodeDelay)},
				Etcd:      &infrav1.InMemoryEtcdSpec{Provisioning: step(s.EtcdDelay)},
				APIServer: &infrav1.InMemoryAPIServerSpec{Provisioning: step(s.APIServerDelay)},
			},
		}}},
	}}
}

// clusterName is the i-th cluster's name.
func clusterName(i int) string { return fmt.Sprintf("c%04d", i) }
