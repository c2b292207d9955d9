package controlplane

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/webhooktest"
)

// These tests call the webhook methods directly, for the update logic that the
// apiserver tests reach only through a real server.

func TestControlPlaneDefaultUsesObjectNamespace(t *testing.T) {
	cp := &controlplanev1.KThreesControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: "mine", Name: "cp"}}
	setOld(&cp.Spec.MachineTemplate, oldShape{ref: oldDockerRef(func(r *controlplanev1.DeprecatedObjectReference) { r.Namespace = "mine" })})
	if err := (&KThreesControlPlane{}).Default(context.Background(), cp); err != nil {
		t.Fatal(err)
	}
	if oldOf(&cp.Spec.MachineTemplate).ref != nil || cp.Spec.MachineTemplate.Spec.InfrastructureRef != dockerRef {
		t.Errorf("reference into the object's own namespace not moved: %+v", cp.Spec.MachineTemplate)
	}
}

func TestControlPlaneValidateUpdate(t *testing.T) {
	w := &KThreesControlPlane{}
	ctx := context.Background()
	stored := func() *controlplanev1.KThreesControlPlane {
		return &controlplanev1.KThreesControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "cp"}, Spec: validSpec()}
	}

	tests := []struct {
		name   string
		modify func(*controlplanev1.KThreesControlPlane)
		want   string // a fragment of the error; empty means allowed
	}{
		{name: "metadata only", modify: func(cp *controlplanev1.KThreesControlPlane) { cp.Finalizers = []string{"x"} }},
		{name: "scale up", modify: func(cp *controlplanev1.KThreesControlPlane) { cp.Spec.Replicas = ptr.To[int32](5) }},
		{name: "scale to even", modify: func(cp *controlplanev1.KThreesControlPlane) { cp.Spec.Replicas = ptr.To[int32](2) },
			want: "spec.replicas: Invalid value: 2: must be odd"},
		{name: "one minor up", modify: func(cp *controlplanev1.KThreesControlPlane) { cp.Spec.Version = "v1.32.0+k3s1" }},
		{name: "two minors up", modify: func(cp *controlplanev1.KThreesControlPlane) { cp.Spec.Version = "v1.33.0+k3s1" },
			want: "spec.version: Invalid value: \"v1.33.0+k3s1\": cannot upgrade from v1.31.4+k3s1 directly: upgrade one minor version at a time: v1.31.x → v1.32.x first"},
		{name: "downgrade", modify: func(cp *controlplanev1.KThreesControlPlane) { cp.Spec.Version = "v1.31.3+k3s1" },
			want: "spec.version: Invalid value: \"v1.31.3+k3s1\": cannot downgrade from v1.31.4+k3s1"},
		{name: "new infrastructure template", modify: func(cp *controlplanev1.KThreesControlPlane) {
			cp.Spec.MachineTemplate.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{
				APIGroup: "infrastructure.example.com", Kind: "OtherMachineTemplate", Name: "y"}
		}},
		{name: "cluster CIDR", modify: func(cp *controlplanev1.KThreesControlPlane) {
			cp.Spec.KThreesConfigSpec.ServerConfig.ClusterCidr = "10.99.0.0/16"
		}, want: "spec.kthreesConfigSpec.serverConfig.clusterCidr: Forbidden: is immutable"},
		{name: "rules and transitions together", modify: func(cp *controlplanev1.KThreesControlPlane) {
			cp.Spec.Version = "v1.30.0+k3s1"
			cp.Spec.KThreesConfigSpec.ServerConfig.ClusterDomain = ""
			cp.Spec.RolloutStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
			cp.Spec.Replicas = ptr.To[int32](1)
		}, want: "spec.kthreesConfigSpec.serverConfig.clusterDomain: Forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldCP, newCP := stored(), stored()
			tt.modify(newCP)
			if err := w.Default(ctx, newCP); err != nil {
				t.Fatal(err)
			}
			_, err := w.ValidateUpdate(ctx, oldCP, newCP)
			webhooktest.CheckInvalid(t, err, tt.want)
		})
	}
}

// TestControlPlaneValidateUpdateLegacy: a control plane stored before the webhook
// (odd rules broken, version without "v", cluster-api-k3s fields in place) keeps its
// metadata editable, but any spec change must make the whole spec valid.
func TestControlPlaneValidateUpdateLegacy(t *testing.T) {
	w := &KThreesControlPlane{}
	ctx := context.Background()
	legacy := &controlplanev1.KThreesControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "legacy"}}
	legacy.Spec = validSpec()
	legacy.Spec.Replicas = ptr.To[int32](2)
	legacy.Spec.Version = "1.31.4+k3s1"
	legacy.Spec.RolloutStrategy = nil
	legacy.Spec.MachineTemplate.Spec = controlplanev1.KThreesControlPlaneMachineTemplateSpec{}
	setOld(&legacy.Spec.MachineTemplate, oldShape{ref: oldDockerRef(), drain: duration("2m")})

	newCP := legacy.DeepCopy()
	newCP.Labels = map[string]string{"a": "b"}
	if err := w.Default(ctx, newCP); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ValidateUpdate(ctx, legacy, newCP); err != nil {
		t.Errorf("metadata-only update rejected: %v", err)
	}

	newCP.Spec.Version = "v1.31.5+k3s1"
	_, err := w.ValidateUpdate(ctx, legacy, newCP)
	webhooktest.CheckInvalid(t, err, "spec.replicas: Invalid value: 2")

	newCP.Spec.Replicas = ptr.To[int32](3)
	if _, err := w.ValidateUpdate(ctx, legacy, newCP); err != nil {
		t.Errorf("spec change to a valid spec rejected: %v", err)
	}
}

func TestTemplateValidateUpdate(t *testing.T) {
	w := &KThreesControlPlaneTemplate{}
	oldT := &controlplanev1.KThreesControlPlaneTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "t"},
		Spec:       controlplanev1.KThreesControlPlaneTemplateSpec{Template: controlplanev1.KThreesControlPlaneTemplateResource{Spec: validTemplateSpec()}},
	}
	// Stored before the webhook: the config version without its "v".
	oldT.Spec.Template.Spec.KThreesConfigSpec.Version = "1.31.4+k3s1"
	tests := []struct {
		name   string
		dryRun bool
		modify func(*controlplanev1.KThreesControlPlaneTemplate)
		want   string
	}{
		{name: "metadata only", modify: func(t *controlplanev1.KThreesControlPlaneTemplate) { t.Labels = map[string]string{"a": "b"} }},
		{name: "template metadata", modify: func(t *controlplanev1.KThreesControlPlaneTemplate) {
			t.Spec.Template.ObjectMeta.Labels = map[string]string{"a": "b"}
		}},
		{name: "invalid template metadata", modify: func(t *controlplanev1.KThreesControlPlaneTemplate) {
			t.Spec.Template.ObjectMeta.Labels = map[string]string{"not a key": "b"}
		}, want: "spec.template.metadata.labels"},
		{name: "spec change", modify: func(t *controlplanev1.KThreesControlPlaneTemplate) {
			t.Spec.Template.Spec.RolloutStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
			t.Spec.Template.Spec.MachineTemplate.Spec.Deletion.NodeDrainTimeoutSeconds = ptr.To[int32](1)
		}, want: "spec.template.spec: Forbidden: " + immutableTemplateMessage + " (changed: machineTemplate, rolloutStrategy)"},
		{name: "spec change in a plain dry run", dryRun: true, modify: func(t *controlplanev1.KThreesControlPlaneTemplate) {
			t.Spec.Template.Spec.KThreesConfigSpec.PreK3sCommands = []string{"echo"}
		}, want: immutableTemplateMessage + " (changed: kthreesConfigSpec)"},
		{name: "annotation without dry run", modify: func(t *controlplanev1.KThreesControlPlaneTemplate) {
			webhooktest.SetTopologyDryRun(t)
			t.Spec.Template.Spec.RemediationStrategy = nil
		}, want: immutableTemplateMessage},
		{name: "topology dry run", dryRun: true, modify: func(t *controlplanev1.KThreesControlPlaneTemplate) {
			webhooktest.SetTopologyDryRun(t)
			t.Spec.Template.Spec.RemediationStrategy = nil
		}},
		{name: "topology dry run still validates", dryRun: true, modify: func(t *controlplanev1.KThreesControlPlaneTemplate) {
			webhooktest.SetTopologyDryRun(t)
			t.Spec.Template.Spec.KThreesConfigSpec.ServerConfig.AdvertisePort = "0"
		}, want: "spec.template.spec.kthreesConfigSpec.serverConfig.advertisePort"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newT := oldT.DeepCopy()
			tt.modify(newT)
			ctx := webhooktest.UpdateRequest(tt.dryRun)
			if err := w.Default(ctx, newT); err != nil {
				t.Fatal(err)
			}
			_, err := w.ValidateUpdate(ctx, oldT.DeepCopy(), newT)
			webhooktest.CheckInvalid(t, err, tt.want)
		})
	}
}

func TestScaleValidator(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := controlplanev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	surgeZero := &controlplanev1.KThreesControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "surge-zero"}, Spec: validSpec()}
	surgeZero.Spec.RolloutStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
	surgeOne := &controlplanev1.KThreesControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "surge-one"}, Spec: validSpec()}
	v := &ScaleValidator{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(surgeZero, surgeOne).Build()}

	scale := func(replicas int32) runtime.RawExtension {
		raw, err := json.Marshal(&autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}})
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: raw}
	}
	tests := []struct {
		name       string
		cp         string
		from, to   int32
		wantDenied string
	}{
		{name: "up to five", cp: "surge-one", from: 3, to: 5},
		{name: "down to one", cp: "surge-one", from: 3, to: 1},
		{name: "to two", cp: "surge-one", from: 3, to: 2, wantDenied: "spec.replicas: Invalid value: 2: must be odd"},
		{name: "to zero", cp: "surge-one", from: 1, to: 0, wantDenied: "spec.replicas: Invalid value: 0: must be at least 1"},
		{name: "to one under maxSurge 0", cp: "surge-zero", from: 3, to: 1,
			wantDenied: "spec.rolloutStrategy.rollingUpdate.maxSurge: Invalid value: 0: maxSurge 0 removes a server"},
		{name: "unchanged count needs no read", cp: "missing", from: 2, to: 2},
		{name: "missing control plane", cp: "missing", from: 1, to: 3, wantDenied: "reading KThreesControlPlane ns/missing"},
		// Whether an even count is allowed depends on the control plane's datastore.
		{name: "even count needs the control plane", cp: "missing", from: 1, to: 2, wantDenied: "reading KThreesControlPlane ns/missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := v.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Update, Namespace: testNamespace, Name: tt.cp,
				Object: scale(tt.to), OldObject: scale(tt.from),
			}})
			if tt.wantDenied == "" {
				if !resp.Allowed {
					t.Errorf("denied: %+v", resp.Result)
				}
				return
			}
			if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, tt.wantDenied) {
				t.Errorf("got allowed=%v %+v, want denied with %q", resp.Allowed, resp.Result, tt.wantDenied)
			}
		})
	}
}

// equalSpecs keeps the apiserver tests' comparisons semantic (quantities, times).
func equalSpecs(a, b any) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}

// Setting or changing taints warns about Cluster API's feature gate, which this
// webhook cannot see; an update that leaves them alone does not repeat it.
func TestTaintsWarnAboutTheFeatureGate(t *testing.T) {
	w := &KThreesControlPlane{}
	ctx := context.Background()
	cp := &controlplanev1.KThreesControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "cp"}, Spec: validSpec()}
	const want = "spec.machineTemplate.spec.taints needs Cluster API's MachineTaintPropagation feature gate"
	hasWarning := func(warnings admission.Warnings) bool {
		return slices.ContainsFunc(warnings, func(w string) bool { return strings.HasPrefix(w, want) })
	}
	warnings, err := w.ValidateCreate(ctx, cp)
	if err != nil || !hasWarning(warnings) {
		t.Errorf("create with taints: warnings %q, error %v; want the feature gate warning", warnings, err)
	}
	scaled := cp.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](5)
	if warnings, err := w.ValidateUpdate(ctx, cp, scaled); err != nil || hasWarning(warnings) {
		t.Errorf("update without a taint change: warnings %q, error %v; want none about the gate", warnings, err)
	}
	retainted := cp.DeepCopy()
	retainted.Spec.MachineTemplate.Spec.Taints[0].Value = "changed"
	if warnings, err := w.ValidateUpdate(ctx, cp, retainted); err != nil || !hasWarning(warnings) {
		t.Errorf("taint change: warnings %q, error %v; want the feature gate warning", warnings, err)
	}
	untainted := cp.DeepCopy()
	untainted.Spec.MachineTemplate.Spec.Taints = nil
	if warnings, err := w.ValidateCreate(ctx, untainted); err != nil || hasWarning(warnings) {
		t.Errorf("create without taints: warnings %q, error %v; want none about the gate", warnings, err)
	}
}
