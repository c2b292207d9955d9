package controlplane

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/machinenaming"
)

// This file is the one place that says what a server's objects should look like. It is
// used to create machines and to bring existing ones in line, so the two can never
// disagree.

// desiredLabels are a server's labels: the template's, then the ones that tie it to
// the cluster and control plane (these win, since selection depends on them). The
// control plane's watch-filter label is its servers' too: a manager started with
// --watch-filter sees only labelled objects, and the server's Machine and
// KThreesConfig must reach the shard that handles the control plane.
func desiredLabels(kcp *controlplanev1.KThreesControlPlane, cluster *clusterv1.Cluster) map[string]string {
	labels := maps.Clone(kcp.Spec.MachineTemplate.ObjectMeta.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	if shard, ok := kcp.Labels[clusterv1.WatchLabel]; ok {
		labels[clusterv1.WatchLabel] = shard
	}
	labels[clusterv1.ClusterNameLabel] = cluster.Name
	labels[clusterv1.MachineControlPlaneLabel] = ""
	labels[clusterv1.MachineControlPlaneNameLabel] = kcp.Name
	return labels
}

func desiredAnnotations(kcp *controlplanev1.KThreesControlPlane) map[string]string {
	return maps.Clone(kcp.Spec.MachineTemplate.ObjectMeta.Annotations)
}

// desiredDeletion is the Machine's deletion timeouts, propagated in place.
func desiredDeletion(kcp *controlplanev1.KThreesControlPlane) clusterv1.MachineDeletionSpec {
	d := kcp.Spec.MachineTemplate.Spec.Deletion
	return clusterv1.MachineDeletionSpec{
		NodeDrainTimeoutSeconds:        d.NodeDrainTimeoutSeconds,
		NodeVolumeDetachTimeoutSeconds: d.NodeVolumeDetachTimeoutSeconds,
		NodeDeletionTimeoutSeconds:     d.NodeDeletionTimeoutSeconds,
	}
}

// desiredMinReadySeconds is the Machine's minReadySeconds, propagated in place: it
// changes when a Ready Machine counts as Available, not the machine itself.
func desiredMinReadySeconds(kcp *controlplanev1.KThreesControlPlane) *int32 {
	return kcp.Spec.MachineTemplate.Spec.MinReadySeconds
}

// desiredTaints are the taints CAPI's Machine controller keeps on the server's Node,
// propagated in place: the Machine controller changes them on the running Node.
func desiredTaints(kcp *controlplanev1.KThreesControlPlane) []clusterv1.MachineTaint {
	return slices.Clone(kcp.Spec.MachineTemplate.Spec.Taints)
}

// newServerName is the name of a new server's Machine, which its KThreesConfig and
// infrastructure machine share. It is only ever computed for a new server: an
// existing one keeps its name whatever the template says now, so the name is not
// part of the up-to-date decision.
func newServerName(kcp *controlplanev1.KThreesControlPlane, cluster *clusterv1.Cluster) (string, error) {
	name, err := machinenaming.Generate(kcp.Spec.MachineNaming.Template,
		machinenaming.Names{Cluster: cluster.Name, ControlPlane: kcp.Name})
	if err != nil {
		return "", fmt.Errorf("naming a new server from spec.machineNaming.template: %w", err)
	}
	return name, nil
}

func controllerRef(kcp *controlplanev1.KThreesControlPlane) metav1.OwnerReference {
	return *metav1.NewControllerRef(kcp, controlplanev1.GroupVersion.WithKind("KThreesControlPlane"))
}

// desiredMachine is a new server's Machine.
func desiredMachine(kcp *controlplanev1.KThreesControlPlane, cluster *clusterv1.Cluster, name, failureDomain string,
	configRef, infraRef clusterv1.ContractVersionedObjectReference) *clusterv1.Machine {
	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       cluster.Namespace,
			Name:            name,
			Labels:          desiredLabels(kcp, cluster),
			Annotations:     desiredAnnotations(kcp),
			OwnerReferences: []metav1.OwnerReference{controllerRef(kcp)},
		},
		Spec: clusterv1.MachineSpec{
			ClusterName:       cluster.Name,
			Version:           k3s.NormalizeVersion(kcp.Spec.Version),
			Bootstrap:         clusterv1.Bootstrap{ConfigRef: configRef},
			InfrastructureRef: infraRef,
			FailureDomain:     failureDomain,
			ReadinessGates:    kcp.Spec.MachineTemplate.Spec.ReadinessGates,
			Deletion:          desiredDeletion(kcp),
			MinReadySeconds:   desiredMinReadySeconds(kcp),
			Taints:            desiredTaints(kcp),
		},
	}
	// The pre-terminate hook holds the Machine's deletion until k3s has removed its
	// etcd member (etcd.go). It goes on the Machine only, not on its config or infra,
	// and not at all with an external datastore, which has no members.
	if !externalDatastore(kcp) {
		ensureEtcdHook(m)
	}
	return m
}

// desiredKThreesConfig is a new server's bootstrap config. The version is left to the
// Machine, so that one place says which version a server runs.
func desiredKThreesConfig(kcp *controlplanev1.KThreesControlPlane, cluster *clusterv1.Cluster, name string) *bootstrapv1.KThreesConfig {
	spec := *kcp.Spec.KThreesConfigSpec.DeepCopy()
	spec.Version = ""
	// Ignored, and warned about once on the control plane: copied onto each server's
	// config it would draw the same warning on every server this controller creates.
	spec.ServerConfig.DeprecatedEtcdProxyImage = "" //nolint:staticcheck // clearing the ignored field is the point
	return &bootstrapv1.KThreesConfig{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       cluster.Namespace,
			Name:            name,
			Labels:          desiredLabels(kcp, cluster),
			Annotations:     desiredAnnotations(kcp),
			OwnerReferences: []metav1.OwnerReference{controllerRef(kcp)},
		},
		Spec: spec,
	}
}

// desiredRestoreKThreesConfig is the bootstrap config of the server that restores a
// running cluster to a snapshot (KThreesEtcdRestore): a new server's config with
// restoreFrom set to the snapshot's name in the control plane's S3 folder, marked with
// the restore's name so that the bootstrap provider renders it as the first server
// (cluster-reset with the restore path) although the cluster was initialized long
// ago. Everything else is what any server gets, so it is up to date afterwards.
func desiredRestoreKThreesConfig(kcp *controlplanev1.KThreesControlPlane, cluster *clusterv1.Cluster, name, restore, snapshot string) *bootstrapv1.KThreesConfig {
	config := desiredKThreesConfig(kcp, cluster, name)
	etcd := config.Spec.ServerConfig.Etcd
	if etcd == nil {
		etcd = &bootstrapv1.Etcd{}
		config.Spec.ServerConfig.Etcd = etcd
	}
	etcd.RestoreFrom = snapshot
	markRestore(&config.ObjectMeta, restore)
	return config
}

// desiredRestoreMachine is the Machine of the server that restores a running cluster,
// marked with the restore's name: the restore finds its own server by the mark.
func desiredRestoreMachine(kcp *controlplanev1.KThreesControlPlane, cluster *clusterv1.Cluster, name, failureDomain, restore string,
	configRef, infraRef clusterv1.ContractVersionedObjectReference) *clusterv1.Machine {
	m := desiredMachine(kcp, cluster, name, failureDomain, configRef, infraRef)
	markRestore(&m.ObjectMeta, restore)
	return m
}

func markRestore(meta *metav1.ObjectMeta, restore string) {
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[controlplanev1.EtcdRestoreAnnotation] = restore
}

// desiredInfraMachine is a server's infrastructure machine, cloned from the template
// the control plane names now: a new server is created from it, and an in-place
// update writes its spec onto the existing machine (inplace_trigger.go).
func desiredInfraMachine(template *unstructured.Unstructured, kcp *controlplanev1.KThreesControlPlane, cluster *clusterv1.Cluster, name string) (*unstructured.Unstructured, error) {
	owner := controllerRef(kcp)
	infra, err := external.GenerateTemplate(&external.GenerateTemplateInput{
		Template: template,
		TemplateRef: &corev1.ObjectReference{
			APIVersion: template.GetAPIVersion(), Kind: template.GetKind(),
			Namespace: template.GetNamespace(), Name: template.GetName(),
		},
		Namespace:   kcp.Namespace,
		Name:        name,
		ClusterName: cluster.Name,
		OwnerRef:    &owner,
		Labels:      desiredLabels(kcp, cluster),
		Annotations: desiredAnnotations(kcp),
	})
	if err != nil {
		return nil, fmt.Errorf("cloning infrastructure template %s: %w", template.GetName(), err)
	}
	return infra, nil
}

// desiredServerMachine is what an existing server's Machine should be now: the Machine
// a new server would get, under the existing one's name, failure domain and
// references, with what other controllers wrote into its spec (the provider ID, the
// bootstrap data Secret) kept. An in-place update compares the current Machine with it
// and writes it.
func desiredServerMachine(kcp *controlplanev1.KThreesControlPlane, cluster *clusterv1.Cluster, current *clusterv1.Machine) *clusterv1.Machine {
	m := desiredMachine(kcp, cluster, current.Name, current.Spec.FailureDomain,
		current.Spec.Bootstrap.ConfigRef, current.Spec.InfrastructureRef)
	m.Spec.ProviderID = current.Spec.ProviderID
	m.Spec.Bootstrap.DataSecretName = current.Spec.Bootstrap.DataSecretName
	labels, annotations := maps.Clone(current.Labels), maps.Clone(current.Annotations)
	if labels == nil {
		labels = map[string]string{}
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	maps.Copy(labels, m.Labels)
	maps.Copy(annotations, m.Annotations)
	m.Labels, m.Annotations = labels, annotations
	return m
}

// desiredExistingInfraMachine is an existing server's infrastructure machine as an
// in-place update leaves it: the current one with the template's spec laid over it and
// the template's cloned-from annotations. The infrastructure provider writes fields
// into its machine's spec (a provider ID, an address) that the template never has;
// an in-place update must not erase them. previous is the spec that the template the
// machine was cloned from gives, when that is another template than the one named now
// (nil otherwise): the fields it set and the new template does not are removed first,
// as they would be from a machine cloned from the new template. The result is not yet
// what the API server would store (its defaults, a provider's webhooks); the caller
// has the API server normalize it (inplace_infra.go).
func desiredExistingInfraMachine(current, fromTemplate *unstructured.Unstructured, previous map[string]any) *unstructured.Unstructured {
	infra := current.DeepCopy()
	spec, _, _ := unstructured.NestedMap(infra.Object, "spec")
	want, _, _ := unstructured.NestedMap(fromTemplate.Object, "spec")
	infra.Object["spec"] = overlay(withoutDropped(spec, previous, want), want)
	annotations := infra.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	for _, k := range []string{clusterv1.TemplateClonedFromNameAnnotation, clusterv1.TemplateClonedFromGroupKindAnnotation} {
		annotations[k] = fromTemplate.GetAnnotations()[k]
	}
	infra.SetAnnotations(annotations)
	return infra
}

// withoutDropped is base without the fields that previous sets and top does not,
// looking into maps that both set; a field both set (a list, a value) is left to
// overlay, which replaces it with top's.
func withoutDropped(base, previous, top map[string]any) map[string]any {
	if len(previous) == 0 {
		return base
	}
	out := make(map[string]any, len(base))
	for k, v := range base {
		out[k] = v
	}
	for k, pv := range previous {
		tv, kept := top[k]
		if !kept {
			delete(out, k)
			continue
		}
		pm, pIsMap := pv.(map[string]any)
		tm, tIsMap := tv.(map[string]any)
		bm, bIsMap := out[k].(map[string]any)
		if pIsMap && tIsMap && bIsMap {
			out[k] = withoutDropped(bm, pm, tm)
		}
	}
	return out
}

// overlay is base with every field of top set to top's value, maps merged key by key
// and anything else (lists included) replaced.
func overlay(base, top map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(top))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range top {
		if tm, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = overlay(bm, tm)
				continue
			}
		}
		out[k] = v
	}
	return out
}
