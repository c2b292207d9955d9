package controlplane

import (
	"context"
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/webhooktest"
)

func withDatastore(s *controlplanev1.KThreesControlPlaneSpec) {
	s.KThreesConfigSpec.ServerConfig.Datastore = &bootstrapv1.Datastore{
		EndpointSecret: bootstrapv1.SecretKeyReference{Name: "pg", Key: "endpoint"},
	}
}

// With an external datastore the servers hold no etcd quorum: even counts are fine,
// and maxSurge 0 only needs a second server to keep an API up.
func TestValidateSpecWithDatastore(t *testing.T) {
	type spec = controlplanev1.KThreesControlPlaneSpec
	tests := []struct {
		name   string
		modify func(*spec)
		want   []wantErr
	}{
		{name: "two replicas", modify: func(s *spec) { s.Replicas = ptr.To[int32](2) }},
		{name: "four replicas", modify: func(s *spec) { s.Replicas = ptr.To[int32](4) }},
		{name: "zero replicas", modify: func(s *spec) { s.Replicas = ptr.To[int32](0) },
			want: []wantErr{{"spec.replicas", "must be at least 1"}}},
		{name: "maxSurge 0 with two replicas", modify: func(s *spec) {
			s.Replicas = ptr.To[int32](2)
			s.RolloutStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
		}},
		{name: "maxSurge 0 with one replica", modify: func(s *spec) {
			s.Replicas = ptr.To[int32](1)
			s.RolloutStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
		}, want: []wantErr{{"spec.rolloutStrategy.rollingUpdate.maxSurge", "with a single server that leaves the cluster without an API server"}}},
		{name: "bad datastore reference", modify: func(s *spec) {
			s.KThreesConfigSpec.ServerConfig.Datastore.EndpointSecret.Key = "mysql://root:pw@db/k3s"
		}, want: []wantErr{{"spec.kthreesConfigSpec.serverConfig.datastore.endpointSecret.key", "not the value itself"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			withDatastore(&s)
			tt.modify(&s)
			checkErrors(t, validateSpec(&s, testNamespace, field.NewPath("spec")), tt.want)
		})
	}
}

func TestScaleValidatorWithDatastore(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := controlplanev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	external := newControlPlane(testNamespace)
	external.Name = "external"
	withDatastore(&external.Spec)
	embedded := newControlPlane(testNamespace)
	embedded.Name = "embedded"
	v := &ScaleValidator{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(external, embedded).Build()}
	scale := func(replicas int32) runtime.RawExtension {
		raw, err := json.Marshal(&autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}})
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: raw}
	}
	for _, tt := range []struct {
		cp          string
		to          int32
		wantAllowed bool
	}{
		{"external", 2, true},
		{"external", 4, true},
		{"external", 0, false},
		{"embedded", 2, false},
	} {
		resp := v.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Update, Namespace: testNamespace, Name: tt.cp, Object: scale(tt.to), OldObject: scale(3),
		}})
		if resp.Allowed != tt.wantAllowed {
			t.Errorf("%s scaled to %d: allowed %v, want %v (%+v)", tt.cp, tt.to, resp.Allowed, tt.wantAllowed, resp.Result)
		}
	}
}

// Through the apiserver: 2 servers are accepted with a datastore and refused without,
// and an existing control plane cannot switch between the two, either way.
func TestControlPlaneDatastoreAdmission(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)

	embedded := newControlPlane(ns)
	embedded.Name = "embedded"
	embedded.Spec.Replicas = ptr.To[int32](2)
	err := env.Client.Create(ctx, embedded)
	webhooktest.CheckRejected(t, err, webhooktest.Rejection{Path: "spec.replicas", Message: "must be odd", Webhook: controlPlaneWebhook})

	external := newControlPlane(ns)
	external.Name = "external"
	external.Spec.Replicas = ptr.To[int32](2)
	withDatastore(&external.Spec)
	if err := env.Client.Create(ctx, external); err != nil {
		t.Fatalf("2 servers on an external datastore refused: %v", err)
	}
	if err := env.Client.SubResource("scale").Update(ctx, external,
		client.WithSubResourceBody(&autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 4}})); err != nil {
		t.Fatalf("kubectl scale to 4 servers on an external datastore refused: %v", err)
	}

	get := func(name string) *controlplanev1.KThreesControlPlane {
		got := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	cp := get("external")
	cp.Spec.KThreesConfigSpec.ServerConfig.Datastore.EndpointSecret = bootstrapv1.SecretKeyReference{Name: "pg-new", Key: "url"}
	if err := env.Client.Update(ctx, cp); err != nil {
		t.Fatalf("changing the datastore's Secret refused: %v", err)
	}
	cp = get("external")
	cp.Spec.Replicas = ptr.To[int32](3)
	cp.Spec.KThreesConfigSpec.ServerConfig.Datastore = nil
	err = env.Client.Update(ctx, cp)
	webhooktest.CheckRejected(t, err, webhooktest.Rejection{
		Path:    "spec.kthreesConfigSpec.serverConfig.datastore",
		Message: "cannot switch from an external datastore to the embedded etcd", Webhook: controlPlaneWebhook,
	})

	odd := newControlPlane(ns)
	odd.Name = "odd"
	if err := env.Client.Create(ctx, odd); err != nil {
		t.Fatal(err)
	}
	cp = get("odd")
	withDatastore(&cp.Spec)
	err = env.Client.Update(ctx, cp)
	webhooktest.CheckRejected(t, err, webhooktest.Rejection{
		Path:    "spec.kthreesConfigSpec.serverConfig.datastore",
		Message: "cannot switch from the embedded etcd to an external datastore", Webhook: controlPlaneWebhook,
	})
	if get("odd").Spec.KThreesConfigSpec.ServerConfig.Datastore != nil {
		t.Error("the refused switch was stored")
	}
}
