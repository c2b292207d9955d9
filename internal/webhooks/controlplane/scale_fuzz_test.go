package controlplane

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/webhooktest"
)

// FuzzScaleWebhook scales random control planes (made as webhooktest.FillFromFuzz
// makes them, then defaulted as the mutating webhook stored them) from oldReplicas to
// newReplicas, or with raw bytes as the new Scale. Nothing panics; a denial is a bad
// request (a Scale that does not decode) or an Invalid status naming its fields; and
// on a valid control plane the scale webhook and the KThreesControlPlane webhook
// agree on the new count, since a replica change reaches only one of them depending on
// how the client writes it (kubectl scale or kubectl edit).
func FuzzScaleWebhook(f *testing.F) {
	f.Add([]byte(`{"spec":{"version":"v1.31.4+k3s1","replicas":3}}`), int32(3), int32(2), []byte(nil))
	f.Add([]byte(`{"spec":{"version":"v1.31.4+k3s1","replicas":3,"rolloutStrategy":{"rollingUpdate":{"maxSurge":0}}}}`), int32(3), int32(1), []byte(nil))
	f.Add([]byte(`{"spec":{"version":"v1.31.4+k3s1","kthreesConfigSpec":{"serverConfig":{"datastore":{"endpoint":"postgres://db:5432/k3s"}}}}}`), int32(1), int32(2), []byte(nil))
	f.Add([]byte(`{}`), int32(1), int32(3), []byte(`{"spec":{"replicas":"x"}}`))
	scheme := runtime.NewScheme()
	if err := controlplanev1.AddToScheme(scheme); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cpData []byte, oldReplicas, newReplicas int32, rawNew []byte) {
		stored := &controlplanev1.KThreesControlPlane{}
		if !webhooktest.FillFromFuzz(cpData, stored) {
			t.Skip("not an object JSON can carry")
		}
		// Only the spec matters here; random metadata could not be stored.
		stored.ObjectMeta = metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "fuzz"}
		stored.Spec.Replicas = &oldReplicas
		w := &KThreesControlPlane{}
		ctx := context.Background()
		if err := w.Default(ctx, stored); err != nil {
			t.Fatal(err)
		}
		v := &ScaleValidator{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored.DeepCopy()).Build()}

		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Update, Namespace: stored.Namespace, Name: stored.Name,
			OldObject: runtime.RawExtension{Raw: scaleJSON(t, oldReplicas)},
			Object:    runtime.RawExtension{Raw: rawNew},
		}}
		if len(rawNew) == 0 {
			req.Object.Raw = scaleJSON(t, newReplicas)
		}
		resp := v.Handle(ctx, req)
		if !resp.Allowed {
			switch s := resp.Result; {
			case s == nil:
				t.Fatal("denied without a status")
			case s.Code == http.StatusBadRequest && len(rawNew) > 0:
			case s.Reason == metav1.StatusReasonInvalid:
				if msg := webhooktest.CheckStatusCauses(*s); msg != "" {
					t.Fatal(msg)
				}
			default:
				t.Fatalf("denied with %d %s: %s", s.Code, s.Reason, s.Message)
			}
		}

		if len(rawNew) > 0 || oldReplicas == newReplicas {
			return
		}
		if _, err := w.ValidateCreate(ctx, stored.DeepCopy()); err != nil {
			return
		}
		edited := stored.DeepCopy()
		edited.Spec.Replicas = &newReplicas
		_, err := w.ValidateUpdate(webhooktest.UpdateRequest(false), stored, edited)
		if resp.Allowed != (err == nil) {
			denial := ""
			if resp.Result != nil {
				denial = resp.Result.Message
			}
			t.Fatalf("replicas %d -> %d: the scale webhook allows it: %v (%s); the KThreesControlPlane webhook's error: %v",
				oldReplicas, newReplicas, resp.Allowed, denial, err)
		}
	})
}

func scaleJSON(t *testing.T, replicas int32) []byte {
	raw, err := json.Marshal(&autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
