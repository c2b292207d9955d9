package controlplane

import (
	"math"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

const testNamespace = "ns"

var dockerRef = clusterv1.ContractVersionedObjectReference{
	APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Name: "x",
}

// oldDockerRef is dockerRef as cluster-api-k3s wrote it, changed by modify.
func oldDockerRef(modify ...func(*controlplanev1.DeprecatedObjectReference)) *controlplanev1.DeprecatedObjectReference {
	r := &controlplanev1.DeprecatedObjectReference{
		APIVersion: "infrastructure.cluster.x-k8s.io/v1beta1", Kind: "DockerMachineTemplate", Name: "x",
	}
	for _, m := range modify {
		m(r)
	}
	return r
}

// oldShape holds cluster-api-k3s's machine-template fields. Tests set and read them
// through it, so that the deprecated fields are named in deprecated.go only.
type oldShape struct {
	ref                     *controlplanev1.DeprecatedObjectReference
	drain, detach, deletion *metav1.Duration
}

// setOld sets the fields that o sets.
func setOld(m *controlplanev1.KThreesControlPlaneMachineTemplate, o oldShape) {
	if o.ref != nil {
		*deprecatedRef(m) = o.ref
	}
	timeouts := deprecatedTimeouts(m)
	for i, d := range []*metav1.Duration{o.drain, o.detach, o.deletion} {
		if d != nil {
			*timeouts[i].old = d
		}
	}
}

func oldOf(m *controlplanev1.KThreesControlPlaneMachineTemplate) oldShape {
	timeouts := deprecatedTimeouts(m)
	return oldShape{ref: *deprecatedRef(m), drain: *timeouts[0].old, detach: *timeouts[1].old, deletion: *timeouts[2].old}
}

// machineTemplate is a machine template with both shapes' fields.
func machineTemplate(spec controlplanev1.KThreesControlPlaneMachineTemplateSpec, o oldShape) controlplanev1.KThreesControlPlaneMachineTemplate {
	m := controlplanev1.KThreesControlPlaneMachineTemplate{Spec: spec}
	setOld(&m, o)
	return m
}

func duration(s string) *metav1.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return &metav1.Duration{Duration: d}
}

func TestDefaultSpec(t *testing.T) {
	defaultRollout := &controlplanev1.RolloutStrategy{
		Type:          controlplanev1.RollingUpdateStrategyType,
		RollingUpdate: &controlplanev1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt32(1))},
	}
	tests := []struct {
		name string
		in   controlplanev1.KThreesControlPlaneSpec
		want controlplanev1.KThreesControlPlaneSpec
	}{
		{
			name: "empty spec",
			in:   controlplanev1.KThreesControlPlaneSpec{},
			want: controlplanev1.KThreesControlPlaneSpec{Replicas: ptr.To[int32](1), RolloutStrategy: defaultRollout},
		},
		{
			name: "version, replicas and config version",
			in: controlplanev1.KThreesControlPlaneSpec{Version: "1.31.4+k3s1", Replicas: ptr.To[int32](3),
				KThreesConfigSpec: bootstrapv1.KThreesConfigSpec{Version: "1.31.4+k3s1"}},
			want: controlplanev1.KThreesControlPlaneSpec{Version: "v1.31.4+k3s1", Replicas: ptr.To[int32](3), RolloutStrategy: defaultRollout,
				KThreesConfigSpec: bootstrapv1.KThreesConfigSpec{Version: "v1.31.4+k3s1"}},
		},
		{
			// The two normalisers of k3s differ here on purpose: the control plane's
			// version is trimmed, the config spec's stored as written (with its "v"),
			// for the schema's pattern to refuse.
			name: "whitespace around the versions",
			in: controlplanev1.KThreesControlPlaneSpec{Version: " 1.31.4+k3s1\t", Replicas: ptr.To[int32](1),
				KThreesConfigSpec: bootstrapv1.KThreesConfigSpec{Version: " 1.31.4+k3s1"}},
			want: controlplanev1.KThreesControlPlaneSpec{Version: "v1.31.4+k3s1", Replicas: ptr.To[int32](1), RolloutStrategy: defaultRollout,
				KThreesConfigSpec: bootstrapv1.KThreesConfigSpec{Version: "v 1.31.4+k3s1"}},
		},
		{
			name: "explicit zero replicas are kept for validation to reject",
			in:   controlplanev1.KThreesControlPlaneSpec{Version: "v1.31.4", Replicas: ptr.To[int32](0)},
			want: controlplanev1.KThreesControlPlaneSpec{Version: "v1.31.4", Replicas: ptr.To[int32](0), RolloutStrategy: defaultRollout},
		},
		{
			name: "partial rollout strategy is completed",
			in:   controlplanev1.KThreesControlPlaneSpec{Replicas: ptr.To[int32](1), RolloutStrategy: &controlplanev1.RolloutStrategy{}},
			want: controlplanev1.KThreesControlPlaneSpec{Replicas: ptr.To[int32](1), RolloutStrategy: defaultRollout},
		},
		{
			name: "maxSurge 0 as a string is kept",
			in: controlplanev1.KThreesControlPlaneSpec{Replicas: ptr.To[int32](3), RolloutStrategy: &controlplanev1.RolloutStrategy{
				RollingUpdate: &controlplanev1.RollingUpdate{MaxSurge: ptr.To(intstr.FromString("0"))}}},
			want: controlplanev1.KThreesControlPlaneSpec{Replicas: ptr.To[int32](3), RolloutStrategy: &controlplanev1.RolloutStrategy{
				Type: controlplanev1.RollingUpdateStrategyType, RollingUpdate: &controlplanev1.RollingUpdate{MaxSurge: ptr.To(intstr.FromString("0"))}}},
		},
		{
			name: "unknown strategy type is not filled",
			in: controlplanev1.KThreesControlPlaneSpec{Replicas: ptr.To[int32](1),
				RolloutStrategy: &controlplanev1.RolloutStrategy{Type: "Recreate"}},
			want: controlplanev1.KThreesControlPlaneSpec{Replicas: ptr.To[int32](1),
				RolloutStrategy: &controlplanev1.RolloutStrategy{Type: "Recreate"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.in.DeepCopy()
			defaultSpec(spec, testNamespace)
			if !apiequality.Semantic.DeepEqual(*spec, tt.want) {
				t.Errorf("defaulted:\n got %+v\nwant %+v", spec, tt.want)
			}
			defaultSpec(spec, testNamespace)
			if !apiequality.Semantic.DeepEqual(*spec, tt.want) {
				t.Errorf("not idempotent: second pass gives %+v", spec)
			}
		})
	}
}

// TestConvertDeprecatedMachineTemplate checks each cluster-api-k3s field's move, and
// that nothing is dropped silently: whatever defaulting leaves behind, validation
// rejects, and whatever it clears is in the new field.
func TestConvertDeprecatedMachineTemplate(t *testing.T) {
	type spec = controlplanev1.KThreesControlPlaneMachineTemplateSpec
	type deletion = controlplanev1.MachineDeletionSpec
	type ref = controlplanev1.DeprecatedObjectReference
	mt := machineTemplate
	withRef := func(r clusterv1.ContractVersionedObjectReference) spec { return spec{InfrastructureRef: r} }
	refNamed := func(name string) clusterv1.ContractVersionedObjectReference {
		r := dockerRef
		r.Name = name
		return r
	}
	inNamespace := func(ns string) func(*ref) { return func(r *ref) { r.Namespace = ns } }
	withAPIVersion := func(v string) func(*ref) { return func(r *ref) { r.APIVersion = v } }
	converted := mt(withRef(dockerRef), oldShape{})
	tests := []struct {
		name string
		in   controlplanev1.KThreesControlPlaneMachineTemplate
		// want is the converted template; nil means in, unchanged.
		want *controlplanev1.KThreesControlPlaneMachineTemplate
		// rejected: validation must reject what defaulting left behind.
		rejected bool
	}{
		// infrastructureRef
		{name: "ref moved", in: mt(spec{}, oldShape{ref: oldDockerRef()}), want: &converted},
		{name: "ref in own namespace moved", in: mt(spec{}, oldShape{ref: oldDockerRef(inNamespace(testNamespace))}), want: &converted},
		{name: "ref of any version moved",
			in: mt(spec{}, oldShape{ref: oldDockerRef(withAPIVersion("infrastructure.cluster.x-k8s.io/v1beta2"))}), want: &converted},
		{name: "ref in another namespace kept", in: mt(spec{}, oldShape{ref: oldDockerRef(inNamespace("other"))}), rejected: true},
		{name: "ref without apiVersion kept", in: mt(spec{}, oldShape{ref: oldDockerRef(withAPIVersion(""))}), rejected: true},
		{name: "ref to the core group kept", in: mt(spec{}, oldShape{ref: oldDockerRef(withAPIVersion("v1"))}), rejected: true},
		{name: "ref with a group but no version kept",
			in: mt(spec{}, oldShape{ref: oldDockerRef(withAPIVersion("infrastructure.cluster.x-k8s.io/"))}), rejected: true},
		{name: "ref with an unparsable apiVersion kept", in: mt(spec{}, oldShape{ref: oldDockerRef(withAPIVersion("a/b/c"))}), rejected: true},
		{name: "ref without kind kept", in: mt(spec{}, oldShape{ref: oldDockerRef(func(r *ref) { r.Kind = "" })}), rejected: true},
		{name: "ref without name kept", in: mt(spec{}, oldShape{ref: oldDockerRef(func(r *ref) { r.Name = "" })}), rejected: true},
		{name: "empty ref kept", in: mt(spec{}, oldShape{ref: &ref{}}), rejected: true},
		{name: "ref equal to the new one cleared", in: mt(withRef(dockerRef), oldShape{ref: oldDockerRef()}), want: &converted},
		{name: "ref different from the new one kept", in: mt(withRef(refNamed("y")), oldShape{ref: oldDockerRef()}), rejected: true},
		{name: "ref in another namespace kept beside an equal new one",
			in: mt(withRef(dockerRef), oldShape{ref: oldDockerRef(inNamespace("other"))}), rejected: true},
		{name: "already converted", in: converted},

		// timeouts
		{name: "drain timeout moved", in: mt(withRef(dockerRef), oldShape{drain: duration("2m")}),
			want: ptr.To(mt(spec{InfrastructureRef: dockerRef, Deletion: deletion{NodeDrainTimeoutSeconds: ptr.To[int32](120)}}, oldShape{}))},
		{name: "volume detach timeout moved", in: mt(withRef(dockerRef), oldShape{detach: duration("1h")}),
			want: ptr.To(mt(spec{InfrastructureRef: dockerRef, Deletion: deletion{NodeVolumeDetachTimeoutSeconds: ptr.To[int32](3600)}}, oldShape{}))},
		{name: "deletion timeout moved", in: mt(withRef(dockerRef), oldShape{deletion: duration("10s")}),
			want: ptr.To(mt(spec{InfrastructureRef: dockerRef, Deletion: deletion{NodeDeletionTimeoutSeconds: ptr.To[int32](10)}}, oldShape{}))},
		{name: "fractional seconds rounded up", in: mt(withRef(dockerRef), oldShape{drain: duration("1500ms")}),
			want: ptr.To(mt(spec{InfrastructureRef: dockerRef, Deletion: deletion{NodeDrainTimeoutSeconds: ptr.To[int32](2)}}, oldShape{}))},
		{name: "zero timeout moved as zero", in: mt(withRef(dockerRef), oldShape{deletion: duration("0s")}),
			want: ptr.To(mt(spec{InfrastructureRef: dockerRef, Deletion: deletion{NodeDeletionTimeoutSeconds: ptr.To[int32](0)}}, oldShape{}))},
		{name: "largest timeout moved", in: mt(withRef(dockerRef), oldShape{drain: &metav1.Duration{Duration: maxTimeout}}),
			want: ptr.To(mt(spec{InfrastructureRef: dockerRef, Deletion: deletion{NodeDrainTimeoutSeconds: ptr.To[int32](math.MaxInt32)}}, oldShape{}))},
		{name: "too long a timeout kept",
			in: mt(withRef(dockerRef), oldShape{drain: &metav1.Duration{Duration: maxTimeout + time.Millisecond}}), rejected: true},
		{name: "negative timeout kept", in: mt(withRef(dockerRef), oldShape{detach: duration("-1s")}), rejected: true},
		{name: "timeout equal to the new one cleared",
			in:   mt(spec{InfrastructureRef: dockerRef, Deletion: deletion{NodeDrainTimeoutSeconds: ptr.To[int32](120)}}, oldShape{drain: duration("2m")}),
			want: ptr.To(mt(spec{InfrastructureRef: dockerRef, Deletion: deletion{NodeDrainTimeoutSeconds: ptr.To[int32](120)}}, oldShape{}))},
		{name: "timeout different from the new one kept",
			in:       mt(spec{InfrastructureRef: dockerRef, Deletion: deletion{NodeDeletionTimeoutSeconds: ptr.To[int32](60)}}, oldShape{deletion: duration("2m")}),
			rejected: true},

		// together
		{name: "whole old shape moved",
			in: mt(spec{}, oldShape{ref: oldDockerRef(), drain: duration("2m"), detach: duration("5m"), deletion: duration("10s")}),
			want: ptr.To(mt(spec{InfrastructureRef: dockerRef, Deletion: deletion{NodeDrainTimeoutSeconds: ptr.To[int32](120),
				NodeVolumeDetachTimeoutSeconds: ptr.To[int32](300), NodeDeletionTimeoutSeconds: ptr.To[int32](10)}}, oldShape{}))},
		{name: "timeouts wait for a ref that cannot move",
			in: mt(spec{}, oldShape{ref: oldDockerRef(inNamespace("other")), drain: duration("2m")}), rejected: true},
		{name: "timeouts move beside a conflicting ref",
			in: mt(withRef(refNamed("y")), oldShape{ref: oldDockerRef(), drain: duration("2m")}),
			want: ptr.To(mt(spec{InfrastructureRef: refNamed("y"), Deletion: deletion{NodeDrainTimeoutSeconds: ptr.To[int32](120)}},
				oldShape{ref: oldDockerRef()})),
			rejected: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.in
			if tt.want != nil {
				want = *tt.want
			}
			got := tt.in.DeepCopy()
			convertDeprecatedMachineTemplate(got, testNamespace)
			if !apiequality.Semantic.DeepEqual(*got, want) {
				t.Fatalf("converted:\n got %+v\nwant %+v", *got, want)
			}
			convertDeprecatedMachineTemplate(got, testNamespace)
			if !apiequality.Semantic.DeepEqual(*got, want) {
				t.Errorf("not idempotent: second pass gives %+v", *got)
			}

			errs := validateMachineTemplate(got, testNamespace, field.NewPath("spec", "machineTemplate"))
			if rejected := len(errs) > 0; rejected != tt.rejected {
				t.Errorf("validation rejects: %v, want %v (%v)", rejected, tt.rejected, errs)
			}
			if oldOf(got) != (oldShape{}) && len(errs) == 0 {
				t.Errorf("a deprecated field was left behind and accepted: %+v", *got)
			}
		})
	}
}

func TestDurationSeconds(t *testing.T) {
	for _, tt := range []struct {
		in   time.Duration
		want int32
		ok   bool
	}{
		{0, 0, true},
		{time.Nanosecond, 1, true},
		{time.Second, 1, true},
		{time.Second + time.Nanosecond, 2, true},
		{2 * time.Minute, 120, true},
		{maxTimeout, math.MaxInt32, true},
		{maxTimeout + time.Nanosecond, 0, false},
		{math.MaxInt64, 0, false},
		{-time.Nanosecond, 0, false},
	} {
		got, ok := durationSeconds(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("durationSeconds(%v) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestDefaultTemplateSpec(t *testing.T) {
	spec := &controlplanev1.KThreesControlPlaneTemplateResourceSpec{KThreesConfigSpec: bootstrapv1.KThreesConfigSpec{Version: "1.31.4+k3s1"}}
	defaultTemplateSpec(spec)
	want := controlplanev1.KThreesControlPlaneTemplateResourceSpec{KThreesConfigSpec: bootstrapv1.KThreesConfigSpec{Version: "v1.31.4+k3s1"}}
	if !apiequality.Semantic.DeepEqual(*spec, want) {
		t.Errorf("defaulted template spec %+v, want %+v: only the config version is normalized", *spec, want)
	}
}
