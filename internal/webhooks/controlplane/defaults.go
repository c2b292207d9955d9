package controlplane

import (
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	bootstrapwebhooks "github.com/capk3s/capk3s/internal/webhooks/bootstrap"
)

// defaultControlPlane defaults the spec of the control plane whose metadata is meta:
// defaultSpec, after dropping what Cluster API's topology copied from a
// KThreesControlPlaneTemplate but the template ignores (see dropTopologyCopiedRef).
func defaultControlPlane(spec *controlplanev1.KThreesControlPlaneSpec, meta metav1.Object) {
	dropTopologyCopiedRef(&spec.MachineTemplate, meta.GetLabels())
	defaultSpec(spec, meta.GetNamespace())
}

// dropTopologyCopiedRef removes the cluster-api-k3s machineTemplate.infrastructureRef
// from a control plane that Cluster API's topology made, once the topology has set
// machineTemplate.spec.infrastructureRef. The topology copies a template's spec
// whole, so a KThreesControlPlaneTemplate written for cluster-api-k3s (whose schema
// required that reference) hands it on; in a ClusterClass the template's reference is
// ignored, with a warning on the template, because the ClusterClass names the
// infrastructure template. Kept on the control plane, it would conflict with the one
// the topology set, and every such cluster would be refused. The user's value stays
// on the template.
func dropTopologyCopiedRef(mt *controlplanev1.KThreesControlPlaneMachineTemplate, labels map[string]string) {
	if _, fromTopology := labels[clusterv1.ClusterTopologyOwnedLabel]; fromTopology && mt.Spec.InfrastructureRef.IsDefined() {
		*deprecatedRef(mt) = nil
	}
}

// defaultSpec fills a KThreesControlPlaneSpec in place and moves cluster-api-k3s's
// deprecated machine-template fields to their v1beta2 places. namespace is the
// control plane's own: a deprecated reference may only be moved if it points there.
//
// It is idempotent, which ValidateUpdate relies on: it defaults the stored spec too,
// so that a spec stored before a default existed does not look changed.
func defaultSpec(spec *controlplanev1.KThreesControlPlaneSpec, namespace string) {
	if spec.Replicas == nil {
		spec.Replicas = ptr.To[int32](1)
	}
	spec.Version = k3s.NormalizeVersion(spec.Version)
	spec.RolloutStrategy = defaultRolloutStrategy(spec.RolloutStrategy)
	bootstrapwebhooks.DefaultSpec(&spec.KThreesConfigSpec)
	convertDeprecatedMachineTemplate(&spec.MachineTemplate, namespace)
}

// defaultRolloutStrategy completes a rollout strategy, written in part or not at all,
// to the one the controller follows anyway, so that what is stored says what happens.
func defaultRolloutStrategy(rs *controlplanev1.RolloutStrategy) *controlplanev1.RolloutStrategy {
	if rs == nil {
		rs = &controlplanev1.RolloutStrategy{}
	}
	if rs.Type == "" {
		rs.Type = controlplanev1.RollingUpdateStrategyType
	}
	if rs.Type != controlplanev1.RollingUpdateStrategyType {
		// Not ours to fill: validation rejects the type.
		return rs
	}
	if rs.RollingUpdate == nil {
		rs.RollingUpdate = &controlplanev1.RollingUpdate{}
	}
	if rs.RollingUpdate.MaxSurge == nil {
		rs.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(1))
	}
	return rs
}

// convertDeprecatedMachineTemplate moves cluster-api-k3s's machineTemplate fields to
// machineTemplate.spec. A deprecated field is cleared only when its value now lives in
// the new field: moved into an unset one, or equal to what is already there. Anything
// that cannot be moved without loss (another namespace, an unparsable apiVersion, a
// negative duration, a conflict) stays, and validation rejects it by name. A
// reference with a uid, resourceVersion or fieldPath, which the new one cannot hold,
// is moved but stays as written too, so that nothing the user set is lost; the
// validating webhook warns that those parts are ignored.
func convertDeprecatedMachineTemplate(mt *controlplanev1.KThreesControlPlaneMachineTemplate, namespace string) {
	if old := deprecatedRef(mt); *old != nil {
		current := &mt.Spec.InfrastructureRef
		ref, ok := convertibleRef(*old, namespace)
		if !ok && !current.IsDefined() {
			// Leave the whole old shape alone. A converted timeout would create
			// machineTemplate.spec, whose schema requires infrastructureRef: the
			// rejection would then name a field the user never wrote, instead of
			// validation's explanation of what is wrong with the reference they did.
			return
		}
		if ok && !current.IsDefined() {
			*current = ref
		}
		if ok && *current == ref && !hasIgnoredRefParts(*old) {
			*old = nil
		}
	}
	for _, t := range deprecatedTimeouts(mt) {
		convertDeprecatedTimeout(t.old, t.seconds)
	}
}

// convertibleRef returns the v1beta2 form of a cluster-api-k3s reference, and whether
// it has one: every part is set, the apiVersion names a group, and the namespace is
// empty or the control plane's own (v1beta2 references have no namespace, so any
// other would silently point elsewhere). The version is dropped on purpose: v1beta2
// references resolve it from the referenced CRD's contract label.
func convertibleRef(old *controlplanev1.DeprecatedObjectReference, namespace string) (clusterv1.ContractVersionedObjectReference, bool) {
	gv, err := schema.ParseGroupVersion(old.APIVersion)
	if err != nil || gv.Group == "" || gv.Version == "" || old.Kind == "" || old.Name == "" {
		return clusterv1.ContractVersionedObjectReference{}, false
	}
	if old.Namespace != "" && old.Namespace != namespace {
		return clusterv1.ContractVersionedObjectReference{}, false
	}
	return clusterv1.ContractVersionedObjectReference{APIGroup: gv.Group, Kind: old.Kind, Name: old.Name}, true
}

// hasIgnoredRefParts says a cluster-api-k3s reference carries what a v1beta2
// reference has no place for.
func hasIgnoredRefParts(r *controlplanev1.DeprecatedObjectReference) bool {
	return r.UID != "" || r.ResourceVersion != "" || r.FieldPath != ""
}

// convertDeprecatedTimeout moves a duration into a whole-seconds field; see
// convertDeprecatedMachineTemplate for when the old field is cleared.
func convertDeprecatedTimeout(old **metav1.Duration, seconds **int32) {
	if *old == nil {
		return
	}
	s, ok := durationSeconds((*old).Duration)
	if !ok {
		return
	}
	if *seconds == nil {
		*seconds = ptr.To(s)
	}
	if **seconds == s {
		*old = nil
	}
}

// durationSeconds converts a timeout to whole seconds, rounding up so that a
// converted timeout never expires earlier than the one written ("1500ms" waits 2s,
// not 1s). It fails for what the int32 seconds fields cannot hold.
func durationSeconds(d time.Duration) (int32, bool) {
	if d < 0 {
		return 0, false
	}
	s := d / time.Second
	if d%time.Second != 0 {
		s++
	}
	if s > math.MaxInt32 {
		return 0, false
	}
	return int32(s), true
}

// defaultTemplateSpec defaults a template's spec like the bootstrap template webhook
// does the embedded KThreesConfigSpec, and moves cluster-api-k3s's machine-template
// durations to machineTemplate.spec.deletion as the control plane's are moved (those
// that cannot be moved stay for validation to explain). Replicas, version and the
// rollout strategy are left to the KThreesControlPlane webhook: the first two come
// from the Cluster's topology, and a default stored in the template would only be
// copied onto the control plane, where it is applied anyway. The deprecated
// infrastructureRef is left as written: it has no home in a template (see
// dropTopologyCopiedRef).
func defaultTemplateSpec(spec *controlplanev1.KThreesControlPlaneTemplateResourceSpec) {
	bootstrapwebhooks.DefaultSpec(&spec.KThreesConfigSpec)
	if spec.MachineTemplate != nil {
		for _, t := range templateDeprecatedTimeouts(spec.MachineTemplate) {
			convertDeprecatedTimeout(t.old, t.seconds)
		}
	}
}
