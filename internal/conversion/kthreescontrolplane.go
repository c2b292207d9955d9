package conversion

import (
	"context"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1" //nolint:staticcheck // the v1beta1 contract types of the v1beta1 API served for cluster-api-k3s users
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"

	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// ConvertKThreesControlPlaneV1Beta1ToHub converts a v1beta1 KThreesControlPlane to
// v1beta2, in the steps kthreesconfig.go describes.
func (l Lookups) ConvertKThreesControlPlaneV1Beta1ToHub(ctx context.Context, src *controlplanev1beta1.KThreesControlPlane, dst *controlplanev1.KThreesControlPlane) error {
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	hub, err := takeKept(dst, hubDataAnnotation)
	if err != nil {
		return err
	}
	if err := convertPart(hub, controlPlaneSpecRules, &src.Spec, &dst.Spec, true, controlPlaneSpecToHub); err != nil {
		return err
	}
	if err := restoreWithheld(ctx, l.Stored, hub, controlPlaneSpecRules, dst, &dst.Spec, controlPlaneSpecOf); err != nil {
		return err
	}
	if err := convertPart(hub, controlPlaneStatusRules, &src.Status, &dst.Status, true, infallible(controlPlaneStatusToHub)); err != nil {
		return err
	}
	// Converting back looks the template's apiVersion up; should that give another
	// version (or fail), the v1beta1 reference is kept whole.
	old := kept{}
	if err := keepPart(old, controlPlaneSpecRules, &src.Spec, &dst.Spec, l.specToV1Beta1(ctx)); err != nil {
		return err
	}
	if err := keepPart(old, controlPlaneStatusRules, &src.Status, &dst.Status, infallible(controlPlaneStatusToV1Beta1)); err != nil {
		return err
	}
	return old.write(dst, v1beta1DataAnnotation)
}

// ConvertKThreesControlPlaneHubToV1Beta1 converts a v1beta2 KThreesControlPlane to v1beta1.
func (l Lookups) ConvertKThreesControlPlaneHubToV1Beta1(ctx context.Context, src *controlplanev1.KThreesControlPlane, dst *controlplanev1beta1.KThreesControlPlane) error {
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	old := takeKeptOrNothing(ctx, dst, v1beta1DataAnnotation)
	if err := downPart(ctx, dst, old, controlPlaneSpecRules, &src.Spec, &dst.Spec, true, l.specToV1Beta1(ctx)); err != nil {
		return err
	}
	if err := downPart(ctx, dst, old, controlPlaneStatusRules, &src.Status, &dst.Status, false, infallible(controlPlaneStatusToV1Beta1)); err != nil {
		return err
	}
	// A kept v1beta1 reference whose apiVersion does not parse does not convert back,
	// which only means the v1beta2 spec is kept too (its withheld fields aside).
	hub := kept{}
	if err := keepPart(hub, controlPlaneSpecRules, &src.Spec, &dst.Spec, controlPlaneSpecToHub); err != nil {
		return err
	}
	if err := keepPart(hub, controlPlaneStatusRules, &src.Status, &dst.Status, infallible(controlPlaneStatusToHub)); err != nil {
		return err
	}
	return hub.write(dst, hubDataAnnotation)
}

func controlPlaneSpecOf(c *controlplanev1.KThreesControlPlane) *controlplanev1.KThreesControlPlaneSpec {
	return &c.Spec
}

// specToV1Beta1 is controlPlaneSpecToV1Beta1 for convertPart and keepPart.
func (l Lookups) specToV1Beta1(ctx context.Context) func(*controlplanev1.KThreesControlPlaneSpec, *controlplanev1beta1.KThreesControlPlaneSpec) error {
	return func(in *controlplanev1.KThreesControlPlaneSpec, out *controlplanev1beta1.KThreesControlPlaneSpec) error {
		return l.controlPlaneSpecToV1Beta1(ctx, in, out)
	}
}

// controlPlaneSpecToHub writes the v1beta1 spec's fields over out. A bad apiVersion
// in infrastructureTemplate is refused with the field named: the reference could
// not be followed.
func controlPlaneSpecToHub(in *controlplanev1beta1.KThreesControlPlaneSpec, out *controlplanev1.KThreesControlPlaneSpec) error {
	out.Replicas = nil
	if in.Replicas != nil {
		out.Replicas = ptr.To(*in.Replicas)
	}
	out.Version = in.Version
	// Over a control plane still in cluster-api-k3s's shape (the reference and the
	// drain timeout in machineTemplate's old fields, as down-conversion showed them),
	// what v1beta1 says unchanged stays there: moving it is the controller's and the
	// defaulting webhook's job, which they do with the namespace check.
	mt := &out.MachineTemplate
	if old := mt.DeprecatedInfrastructureRef; mt.Spec.InfrastructureRef.IsDefined() || old == nil || //nolint:staticcheck // see above
		*old != (controlplanev1.DeprecatedObjectReference{APIVersion: in.InfrastructureTemplate.APIVersion, Kind: in.InfrastructureTemplate.Kind,
			Name: in.InfrastructureTemplate.Name, Namespace: in.InfrastructureTemplate.Namespace, UID: in.InfrastructureTemplate.UID,
			ResourceVersion: in.InfrastructureTemplate.ResourceVersion, FieldPath: in.InfrastructureTemplate.FieldPath}) {
		ref := &mt.Spec.InfrastructureRef
		*ref = clusterv1.ContractVersionedObjectReference{Kind: in.InfrastructureTemplate.Kind, Name: in.InfrastructureTemplate.Name}
		if in.InfrastructureTemplate.APIVersion != "" {
			gv, err := schema.ParseGroupVersion(in.InfrastructureTemplate.APIVersion)
			if err != nil {
				return fmt.Errorf("spec.infrastructureTemplate.apiVersion %q: %w", in.InfrastructureTemplate.APIVersion, err)
			}
			ref.APIGroup = gv.Group
		}
	}
	configSpecToHub(&in.KThreesConfigSpec, &out.KThreesConfigSpec)
	out.RolloutAfter = in.UpgradeAfter.DeepCopy()
	if old := mt.DeprecatedNodeDrainTimeout; mt.Spec.Deletion.NodeDrainTimeoutSeconds != nil || old == nil || //nolint:staticcheck // see above
		in.NodeDrainTimeout == nil || old.Duration != in.NodeDrainTimeout.Duration {
		mt.Spec.Deletion.NodeDrainTimeoutSeconds = durationToSeconds(in.NodeDrainTimeout)
	}
	out.MachineTemplate.ObjectMeta = clusterv1.ObjectMeta{
		Labels: in.MachineTemplate.ObjectMeta.Labels, Annotations: in.MachineTemplate.ObjectMeta.Annotations,
	}
	out.RemediationStrategy = nil
	if rs := in.RemediationStrategy; rs != nil {
		out.RemediationStrategy = &controlplanev1.RemediationStrategy{
			MaxRetry: rs.MaxRetry, RetryPeriod: rs.RetryPeriod, MinHealthyPeriod: rs.MinHealthyPeriod,
		}
	}
	*out = *out.DeepCopy()
	return nil
}

// controlPlaneSpecToV1Beta1 writes the v1beta2 spec's fields over out. What out
// already holds of infrastructureTemplate (kept from v1beta1: its apiVersion,
// namespace, uid...) stays while it still names the same template; otherwise the
// apiVersion is looked up. A drain timeout kept with sub-second precision stays
// while it rounds to the same seconds.
func (l Lookups) controlPlaneSpecToV1Beta1(ctx context.Context, in *controlplanev1.KThreesControlPlaneSpec, out *controlplanev1beta1.KThreesControlPlaneSpec) error {
	out.Replicas = nil
	if in.Replicas != nil {
		out.Replicas = ptr.To(*in.Replicas)
	}
	out.Version = in.Version
	ref := in.MachineTemplate.Spec.InfrastructureRef
	if old := in.MachineTemplate.DeprecatedInfrastructureRef; !ref.IsDefined() && old != nil { //nolint:staticcheck // a control plane cluster-api-k3s stored, not moved yet
		// Stored by cluster-api-k3s and not yet moved by the controller (paused,
		// say): its own reference is the one to show.
		out.InfrastructureTemplate = corev1.ObjectReference{APIVersion: old.APIVersion, Kind: old.Kind, Name: old.Name,
			Namespace: old.Namespace, UID: old.UID, ResourceVersion: old.ResourceVersion, FieldPath: old.FieldPath}
	} else if !sameTemplate(out.InfrastructureTemplate, ref) {
		out.InfrastructureTemplate = corev1.ObjectReference{}
		if ref.IsDefined() {
			// Without the template's CRD (not installed yet, or gone) the version is
			// unknown. The apiserver converts every stored object for its v1beta1
			// watch cache, asked or not, so failing here would fail that cache over
			// and over; "group/" keeps the group, converts back to the same v1beta2
			// reference, and says the version is not known.
			apiVersion, err := l.apiVersion(ctx, schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
			if err != nil {
				ctrl.LoggerFrom(ctx).V(2).Info("No apiVersion for the infrastructure template; showing its group alone", "group", ref.APIGroup, "kind", ref.Kind, "reason", err.Error())
				apiVersion = ref.APIGroup + "/"
			}
			// No namespace: the template is always in the control plane's, and
			// manifests written for cluster-api-k3s leave it out.
			out.InfrastructureTemplate = corev1.ObjectReference{APIVersion: apiVersion, Kind: ref.Kind, Name: ref.Name}
		}
	}
	configSpecToV1Beta1(&in.KThreesConfigSpec, &out.KThreesConfigSpec)
	out.UpgradeAfter = in.RolloutAfter.DeepCopy()
	if seconds := in.MachineTemplate.Spec.Deletion.NodeDrainTimeoutSeconds; seconds == nil && in.MachineTemplate.DeprecatedNodeDrainTimeout != nil { //nolint:staticcheck // as for the reference above
		out.NodeDrainTimeout = in.MachineTemplate.DeprecatedNodeDrainTimeout.DeepCopy() //nolint:staticcheck // as for the reference above
	} else if !ptr.Equal(durationToSeconds(out.NodeDrainTimeout), seconds) {
		out.NodeDrainTimeout = nil
		if seconds != nil {
			out.NodeDrainTimeout = &metav1.Duration{Duration: time.Duration(*seconds) * time.Second}
		}
	}
	out.MachineTemplate.ObjectMeta = clusterv1beta1.ObjectMeta{
		Labels: in.MachineTemplate.ObjectMeta.Labels, Annotations: in.MachineTemplate.ObjectMeta.Annotations,
	}
	out.RemediationStrategy = nil
	if rs := in.RemediationStrategy; rs != nil {
		out.RemediationStrategy = &controlplanev1beta1.RemediationStrategy{
			MaxRetry: rs.MaxRetry, RetryPeriod: rs.RetryPeriod, MinHealthyPeriod: rs.MinHealthyPeriod,
		}
	}
	*out = *out.DeepCopy()
	return nil
}

// sameTemplate says whether a v1beta1 reference names the template a v1beta2 one does.
func sameTemplate(old corev1.ObjectReference, ref clusterv1.ContractVersionedObjectReference) bool {
	if old.Kind != ref.Kind || old.Name != ref.Name {
		return false
	}
	// An apiVersion without its version ("group/", shown while the CRD could not be
	// read) is never kept as the answer: the lookup is tried again.
	gv, err := schema.ParseGroupVersion(old.APIVersion)
	return err == nil && gv.Group == ref.APIGroup && gv.Version != ""
}

// durationToSeconds is v1beta2's whole seconds for a v1beta1 duration, rounded up as
// the defaulting webhook moves cluster-api-k3s's durations, so that a timeout never
// ends earlier than the one written; held to what int32 seconds can say. The exact
// duration is kept for v1beta1 readers whenever this loses anything.
func durationToSeconds(d *metav1.Duration) *int32 {
	if d == nil {
		return nil
	}
	s := d.Duration / time.Second // toward zero: up for a negative duration
	if d.Duration%time.Second > 0 {
		s++
	}
	return ptr.To(int32(min(max(s, math.MinInt32), math.MaxInt32)))
}

// controlPlaneStatusToHub converts what the v1beta1 control-plane status shares with
// v1beta2's; a counter already consistent with it is left as it is (unset and 0
// say the same). Its conditions, ready, failureReason and failureMessage have no
// v1beta2 home: they are kept until the controller writes a status of its own.
func controlPlaneStatusToHub(in *controlplanev1beta1.KThreesControlPlaneStatus, out *controlplanev1.KThreesControlPlaneStatus) {
	out.Selector = in.Selector
	out.ObservedGeneration = in.ObservedGeneration
	setIfDifferent(&out.Replicas, in.Replicas)
	setIfDifferent(&out.UpToDateReplicas, in.UpdatedReplicas)
	setIfDifferent(&out.ReadyReplicas, in.ReadyReplicas)
	setIfDifferent(&out.AvailableReplicas, in.Replicas-in.UnavailableReplicas)
	if in.Initialized != ptr.Deref(out.Initialization.ControlPlaneInitialized, false) {
		out.Initialization.ControlPlaneInitialized = ptr.To(in.Initialized)
	}
	out.LastRemediation = nil
	if r := in.LastRemediation; r != nil {
		out.LastRemediation = &controlplanev1.LastRemediationStatus{Machine: r.Machine, Time: r.Timestamp, RetryCount: r.RetryCount}
	}
}

// controlPlaneStatusToV1Beta1 derives the v1beta1 status from v1beta2's: ready is
// the Available condition, as cluster-api-k3s's ready meant "the API can be used".
func controlPlaneStatusToV1Beta1(in *controlplanev1.KThreesControlPlaneStatus, out *controlplanev1beta1.KThreesControlPlaneStatus) {
	out.Selector = in.Selector
	out.ObservedGeneration = in.ObservedGeneration
	out.Replicas = ptr.Deref(in.Replicas, 0)
	out.UpdatedReplicas = ptr.Deref(in.UpToDateReplicas, 0)
	out.ReadyReplicas = ptr.Deref(in.ReadyReplicas, 0)
	out.UnavailableReplicas = out.Replicas - ptr.Deref(in.AvailableReplicas, 0)
	out.Initialized = ptr.Deref(in.Initialization.ControlPlaneInitialized, false)
	out.Ready = conditions.IsTrue(statusOnly{in}, clusterv1.AvailableCondition)
	out.LastRemediation = nil
	if r := in.LastRemediation; r != nil {
		out.LastRemediation = &controlplanev1beta1.LastRemediationStatus{Machine: r.Machine, Timestamp: r.Time, RetryCount: r.RetryCount}
	}
}

// statusOnly lets CAPI's condition getters read a status that is not (yet) on its object.
type statusOnly struct {
	s *controlplanev1.KThreesControlPlaneStatus
}

func (s statusOnly) GetConditions() []metav1.Condition { return s.s.Conditions }

// setIfDifferent sets *p to v unless it already reads as v (nil reads as 0).
func setIfDifferent(p **int32, v int32) {
	if ptr.Deref(*p, 0) != v {
		*p = ptr.To(v)
	}
}
