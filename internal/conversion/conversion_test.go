package conversion

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1" //nolint:staticcheck // the v1beta1 contract types of the v1beta1 API served for cluster-api-k3s users
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// oldControlPlane is a KThreesControlPlane as cluster-api-k3s v0.3 wrote it at v1beta1.
func oldControlPlane() *controlplanev1beta1.KThreesControlPlane {
	upgradeAfter := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return &controlplanev1beta1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: "edge-cp", Namespace: "fleet"},
		Spec: controlplanev1beta1.KThreesControlPlaneSpec{
			Replicas: ptr.To[int32](3),
			Version:  "v1.30.6+k3s1",
			InfrastructureTemplate: corev1.ObjectReference{
				APIVersion: "infrastructure.cluster.x-k8s.io/v1beta2", Kind: "ProxmoxMachineTemplate", Name: "edge-cp",
			},
			KThreesConfigSpec: bootstrapv1beta1.KThreesConfigSpec{
				ServerConfig: bootstrapv1beta1.KThreesServerConfig{
					DisableComponents: []string{"traefik"}, DisableExternalCloudProvider: true, TLSSan: []string{"edge.example.com"},
				},
				AgentConfig:    bootstrapv1beta1.KThreesAgentConfig{NodeName: "{{ ds.meta_data.local_hostname }}", AirGapped: true},
				PreK3sCommands: []string{"swapoff -a"},
			},
			UpgradeAfter:     &upgradeAfter,
			NodeDrainTimeout: &metav1.Duration{Duration: 2 * time.Minute},
			MachineTemplate: controlplanev1beta1.KThreesControlPlaneMachineTemplate{
				ObjectMeta: clusterv1beta1.ObjectMeta{Labels: map[string]string{"tier": "edge"}},
			},
			RemediationStrategy: &controlplanev1beta1.RemediationStrategy{MaxRetry: ptr.To[int32](2)},
		},
		Status: controlplanev1beta1.KThreesControlPlaneStatus{
			Replicas: 3, ReadyReplicas: 2, UpdatedReplicas: 3, UnavailableReplicas: 1, Initialized: true, Ready: true,
			FailureReason: "", ObservedGeneration: 4,
			Conditions: clusterv1beta1.Conditions{{Type: "Ready", Status: corev1.ConditionTrue, Severity: clusterv1beta1.ConditionSeverityNone}},
		},
	}
}

func TestV1Beta1ControlPlaneMapsToItsV1Beta2Fields(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	hub := &controlplanev1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(t.Context(), oldControlPlane(), hub); err != nil {
		t.Fatal(err)
	}
	s := hub.Spec
	if got, want := s.MachineTemplate.Spec.InfrastructureRef, (clusterv1.ContractVersionedObjectReference{
		APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "ProxmoxMachineTemplate", Name: "edge-cp"}); got != want {
		t.Errorf("infrastructureRef = %+v, want %+v", got, want)
	}
	if s.RolloutAfter == nil || !s.RolloutAfter.Equal(oldControlPlane().Spec.UpgradeAfter) {
		t.Errorf("rolloutAfter = %v, want upgradeAfter's time", s.RolloutAfter)
	}
	if got := ptr.Deref(s.MachineTemplate.Spec.Deletion.NodeDrainTimeoutSeconds, -1); got != 120 {
		t.Errorf("nodeDrainTimeoutSeconds = %d, want 120", got)
	}
	if s.MachineTemplate.ObjectMeta.Labels["tier"] != "edge" || ptr.Deref(s.Replicas, 0) != 3 || s.Version != "v1.30.6+k3s1" {
		t.Errorf("labels, replicas, version = %v, %v, %q", s.MachineTemplate.ObjectMeta.Labels, s.Replicas, s.Version)
	}
	if !s.KThreesConfigSpec.ServerConfig.DeprecatedDisableExternalCloudProvider || !s.KThreesConfigSpec.AgentConfig.AirGapped ||
		s.KThreesConfigSpec.ServerConfig.DisableComponents[0] != "traefik" {
		t.Errorf("kthreesConfigSpec not carried over: %+v", s.KThreesConfigSpec)
	}
	if ptr.Deref(s.RemediationStrategy.MaxRetry, 0) != 2 {
		t.Errorf("remediationStrategy = %+v", s.RemediationStrategy)
	}
	st := hub.Status
	if !ptr.Deref(st.Initialization.ControlPlaneInitialized, false) || ptr.Deref(st.Replicas, 0) != 3 ||
		ptr.Deref(st.UpToDateReplicas, 0) != 3 || ptr.Deref(st.AvailableReplicas, 0) != 2 {
		t.Errorf("status = %+v", st)
	}
	if len(st.Conditions) != 0 {
		t.Errorf("v1beta1 conditions became v1beta2 conditions: %+v", st.Conditions)
	}
	// The spec converts without loss; the old status (conditions, ready) is kept.
	if k := keptOf(t, hub, v1beta1DataAnnotation); len(k) != 1 || k["statusPatch"].Patch == nil {
		t.Errorf("kept v1beta1 data = %s, want the status only", hub.Annotations[v1beta1DataAnnotation])
	}
}

func TestV1Beta2ControlPlaneReadsAtV1Beta1(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	hub := &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: "ns"},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Version: "v1.31.4+k3s1",
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Name: "cp"},
				Deletion:          controlplanev1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptr.To[int32](30)},
			}},
			KThreesConfigSpec: bootstrapv1.KThreesConfigSpec{Format: bootstrapv1.Ignition},
		},
		Status: controlplanev1.KThreesControlPlaneStatus{
			Replicas: ptr.To[int32](3), ReadyReplicas: ptr.To[int32](3), AvailableReplicas: ptr.To[int32](2), UpToDateReplicas: ptr.To[int32](1),
			Initialization: controlplanev1.KThreesControlPlaneInitializationStatus{ControlPlaneInitialized: ptr.To(true)},
			Conditions:     []metav1.Condition{{Type: clusterv1.AvailableCondition, Status: metav1.ConditionTrue, Reason: "Available"}},
		},
	}
	old := &controlplanev1beta1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneHubToV1Beta1(t.Context(), hub, old); err != nil {
		t.Fatal(err)
	}
	wantRef := corev1.ObjectReference{APIVersion: "infrastructure.cluster.x-k8s.io/v1beta2", Kind: "DockerMachineTemplate", Name: "cp"}
	if old.Spec.InfrastructureTemplate != wantRef {
		t.Errorf("infrastructureTemplate = %+v, want %+v", old.Spec.InfrastructureTemplate, wantRef)
	}
	if old.Spec.NodeDrainTimeout == nil || old.Spec.NodeDrainTimeout.Duration != 30*time.Second {
		t.Errorf("nodeDrainTimeout = %v, want 30s", old.Spec.NodeDrainTimeout)
	}
	st := old.Status
	if !st.Ready || !st.Initialized || st.Replicas != 3 || st.UnavailableReplicas != 1 || st.UpdatedReplicas != 1 || st.ReadyReplicas != 3 {
		t.Errorf("v1beta1 status = %+v", st)
	}
	// format: ignition has no v1beta1 field: it rides along in the hub data.
	if !strings.Contains(old.Annotations[hubDataAnnotation], `"format":"ignition"`) {
		t.Errorf("v1beta2-only format not kept on the v1beta1 object: %q", old.Annotations[hubDataAnnotation])
	}
	back := &controlplanev1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(t.Context(), old, back); err != nil {
		t.Fatal(err)
	}
	if back.Spec.KThreesConfigSpec.Format != bootstrapv1.Ignition {
		t.Errorf("format lost on the way back: %q", back.Spec.KThreesConfigSpec.Format)
	}
}

func TestBadInfrastructureTemplateAPIVersionIsRefused(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	old := oldControlPlane()
	old.Spec.InfrastructureTemplate.APIVersion = "infrastructure.cluster.x-k8s.io/v1beta1/extra"
	err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(t.Context(), old, &controlplanev1.KThreesControlPlane{})
	if err == nil || !strings.Contains(err.Error(), "spec.infrastructureTemplate.apiVersion") {
		t.Fatalf("err = %v, want one naming spec.infrastructureTemplate.apiVersion", err)
	}
}

// cluster-api-k3s's own status on a taken-over config is shown at v1beta1 until the
// controller writes its first status, and not after.
func TestOldConfigStatusGoesOnceTheControllerWritesItsOwn(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	old := &bootstrapv1beta1.KThreesConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
		Status: bootstrapv1beta1.KThreesConfigStatus{Ready: true, DataSecretName: ptr.To("c-data"),
			FailureReason: "InvalidConfig", FailureMessage: "old failure"},
	}
	hub := &bootstrapv1.KThreesConfig{}
	if err := lk.ConvertKThreesConfigV1Beta1ToHub(t.Context(), old, hub); err != nil {
		t.Fatal(err)
	}
	if hub.Status.DataSecretName != "c-data" || !ptr.Deref(hub.Status.Initialization.DataSecretCreated, false) {
		t.Fatalf("v1beta2 status = %+v", hub.Status)
	}
	unchanged := &bootstrapv1beta1.KThreesConfig{}
	if err := lk.ConvertKThreesConfigHubToV1Beta1(t.Context(), hub.DeepCopy(), unchanged); err != nil {
		t.Fatal(err)
	}
	if unchanged.Status.FailureReason != "InvalidConfig" {
		t.Errorf("unchanged object lost its v1beta1 status: %+v", unchanged.Status)
	}
	hub.Status.ObservedGeneration = 7 // the controller's first pass
	now := &bootstrapv1beta1.KThreesConfig{}
	if err := lk.ConvertKThreesConfigHubToV1Beta1(t.Context(), hub, now); err != nil {
		t.Fatal(err)
	}
	if now.Status.FailureReason != "" || now.Status.FailureMessage != "" || !now.Status.Ready || now.Status.ObservedGeneration != 7 {
		t.Errorf("status after the controller's write = %+v, want v1beta2's alone", now.Status)
	}
}

// Without the template's CRD the apiVersion's version is unknown; the conversion
// still succeeds (the apiserver converts every stored object for its v1beta1 watch
// cache) and the group survives the way back.
func TestUnknownTemplateVersionKeepsTheGroup(t *testing.T) {
	lk := Lookups{APIVersion: func(context.Context, schema.GroupKind) (string, error) {
		return "", errors.New("no CRD")
	}}
	hub := &controlplanev1.KThreesControlPlane{Spec: controlplanev1.KThreesControlPlaneSpec{
		MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "AWSMachineTemplate", Name: "cp"},
		}},
	}}
	old := &controlplanev1beta1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneHubToV1Beta1(t.Context(), hub, old); err != nil {
		t.Fatal(err)
	}
	if got := old.Spec.InfrastructureTemplate.APIVersion; got != "infrastructure.cluster.x-k8s.io/" {
		t.Errorf("apiVersion = %q, want the group with an empty version", got)
	}
	delete(old.Annotations, hubDataAnnotation)
	back := &controlplanev1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(t.Context(), old, back); err != nil {
		t.Fatal(err)
	}
	if back.Spec.MachineTemplate.Spec.InfrastructureRef != hub.Spec.MachineTemplate.Spec.InfrastructureRef {
		t.Errorf("reference back = %+v, want %+v", back.Spec.MachineTemplate.Spec.InfrastructureRef, hub.Spec.MachineTemplate.Spec.InfrastructureRef)
	}
}

// A control plane cluster-api-k3s stored, whose machine template the controller has
// not moved yet (it is paused, say), shows its own reference at v1beta1, and converts
// back up without inventing the moved fields.
func TestNotYetMovedControlPlaneShowsItsOldReference(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	old := &controlplanev1.DeprecatedObjectReference{APIVersion: "infrastructure.cluster.x-k8s.io/v1beta1", Kind: "VSphereMachineTemplate", Name: "cp", Namespace: "ns"}
	hub := &controlplanev1.KThreesControlPlane{Spec: controlplanev1.KThreesControlPlaneSpec{Version: "v1.30.6+k3s1",
		MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{
			DeprecatedInfrastructureRef: old, DeprecatedNodeDrainTimeout: &metav1.Duration{Duration: 90 * time.Second}, //nolint:staticcheck // the old fields are what is tested
		}}}
	v1 := &controlplanev1beta1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneHubToV1Beta1(t.Context(), hub.DeepCopy(), v1); err != nil {
		t.Fatal(err)
	}
	want := corev1.ObjectReference{APIVersion: old.APIVersion, Kind: old.Kind, Name: old.Name, Namespace: old.Namespace}
	if v1.Spec.InfrastructureTemplate != want || v1.Spec.NodeDrainTimeout == nil || v1.Spec.NodeDrainTimeout.Duration != 90*time.Second {
		t.Errorf("v1beta1 spec = %+v, want the old reference and 90s", v1.Spec)
	}
	v1.Spec.Version = "v1.31.4+k3s1"
	back := &controlplanev1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(t.Context(), v1, back); err != nil {
		t.Fatal(err)
	}
	if back.Spec.MachineTemplate.Spec.InfrastructureRef.IsDefined() || back.Spec.MachineTemplate.Spec.Deletion.NodeDrainTimeoutSeconds != nil {
		t.Errorf("converting up moved the old fields itself: %+v", back.Spec.MachineTemplate.Spec)
	}
	if back.Spec.Version != "v1.31.4+k3s1" || *back.Spec.MachineTemplate.DeprecatedInfrastructureRef != *old { //nolint:staticcheck // the old fields are what is tested
		t.Errorf("edit or old reference lost: version %q, reference %+v", back.Spec.Version, back.Spec.MachineTemplate.DeprecatedInfrastructureRef) //nolint:staticcheck // the old fields are what is tested
	}
}

// Damaged kept data on a stored object must not fail the conversion down, which the
// apiserver runs on every write of the object.
func TestUnreadableKeptDataIsIgnoredGoingDown(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	hub := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{
		Annotations: map[string]string{v1beta1DataAnnotation: "{not json"}}}
	hub.Spec.Version = "v1.31.4+k3s1"
	v1 := &bootstrapv1beta1.KThreesConfig{}
	if err := lk.ConvertKThreesConfigHubToV1Beta1(t.Context(), hub, v1); err != nil {
		t.Fatalf("converting down with damaged kept data: %v", err)
	}
	if v1.Spec.Version != "v1.31.4+k3s1" {
		t.Errorf("spec not converted: %+v", v1.Spec)
	}
	if _, ok := v1.Annotations[v1beta1DataAnnotation]; ok {
		t.Error("the damaged annotation was handed to the v1beta1 object")
	}
}

// Kept data that reads but does not apply (a hand edit) is ignored going down too.
func TestKeptPatchThatDoesNotApplyIsIgnoredGoingDown(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	hub := &controlplanev1.KThreesControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "cp", Annotations: map[string]string{
		v1beta1DataAnnotation: `{"specPatch":{"digest":"x","patch":5},"statusPatch":{"digest":"y","patch":[1]}}`}}}
	hub.Spec.Version = "v1.31.4+k3s1"
	v1 := &controlplanev1beta1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneHubToV1Beta1(t.Context(), hub, v1); err != nil {
		t.Fatalf("converting down with kept data that does not apply: %v", err)
	}
	if v1.Spec.Version != "v1.31.4+k3s1" {
		t.Errorf("spec not converted: %+v", v1.Spec)
	}
}

// keptOf reads the kept data under key on obj.
func keptOf(t *testing.T, obj metav1.Object, key string) kept {
	t.Helper()
	k := kept{}
	if v, ok := obj.GetAnnotations()[key]; ok {
		if err := json.Unmarshal([]byte(v), &k); err != nil {
			t.Fatalf("annotation %s: %v", key, err)
		}
	}
	return k
}

// bootstrapData, an inline copy of the bootstrap data with the join token in it, is
// never copied into an annotation.
func TestBootstrapDataIsNotKept(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	old := &bootstrapv1beta1.KThreesConfig{Status: bootstrapv1beta1.KThreesConfigStatus{
		BootstrapData: []byte("#cloud-config token: K10secret"), FailureReason: "x"}}
	hub := &bootstrapv1.KThreesConfig{}
	if err := lk.ConvertKThreesConfigV1Beta1ToHub(t.Context(), old, hub); err != nil {
		t.Fatal(err)
	}
	v := hub.Annotations[v1beta1DataAnnotation]
	if p := keptOf(t, hub, v1beta1DataAnnotation)["statusPatch"]; string(p.Patch) != `{"failureReason":"x"}` ||
		strings.Contains(v, "K10secret") || strings.Contains(v, "I2Nsb3Vk") {
		t.Errorf("kept v1beta1 status = %s, want it without bootstrapData", v)
	}
}
