package bootstrap

import (
	"context"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/test/webhooktest"
)

func equalSpecs(a, b bootstrapv1.KThreesConfigSpec) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}

// These tests call the webhook methods directly, for the update logic that the
// envtest tests reach only through an apiserver.

func TestConfigValidateUpdate(t *testing.T) {
	w := &KThreesConfig{}
	ctx := context.Background()
	legacy := &bootstrapv1.KThreesConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy"},
		Spec:       bootstrapv1.KThreesConfigSpec{Version: "1.31.4+k3s1", Files: []bootstrapv1.File{{Path: "relative"}}},
	}

	// A metadata-only update of an object stored before the webhook passes, even
	// though its spec breaks a rule and the mutating webhook added the "v".
	newC := legacy.DeepCopy()
	newC.Labels = map[string]string{"a": "b"}
	if err := w.Default(ctx, newC); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ValidateUpdate(ctx, legacy, newC); err != nil {
		t.Errorf("metadata-only update rejected: %v", err)
	}

	// A spec change must produce a valid spec.
	newC.Spec.PreK3sCommands = []string{"echo"}
	_, err := w.ValidateUpdate(ctx, legacy, newC)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.files[0].path") {
		t.Errorf("spec change to an invalid spec: got %v, want Invalid on spec.files[0].path", err)
	}
	newC.Spec.Files[0].Path = "/relative"
	if _, err := w.ValidateUpdate(ctx, legacy, newC); err != nil {
		t.Errorf("spec change to a valid spec rejected: %v", err)
	}
}

func TestTemplateValidateUpdate(t *testing.T) {
	w := &KThreesConfigTemplate{}
	oldT := &bootstrapv1.KThreesConfigTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "t"},
		Spec: bootstrapv1.KThreesConfigTemplateSpec{Template: bootstrapv1.KThreesConfigTemplateResource{
			Spec: bootstrapv1.KThreesConfigSpec{Version: "1.31.4+k3s1"},
		}},
	}
	tests := []struct {
		name    string
		dryRun  bool
		modify  func(*bootstrapv1.KThreesConfigTemplate)
		wantErr string
	}{
		{name: "metadata only", modify: func(t *bootstrapv1.KThreesConfigTemplate) { t.Labels = map[string]string{"a": "b"} }},
		{name: "template metadata", modify: func(t *bootstrapv1.KThreesConfigTemplate) {
			t.Spec.Template.ObjectMeta.Labels = map[string]string{"a": "b"}
		}},
		{name: "invalid template metadata", modify: func(t *bootstrapv1.KThreesConfigTemplate) {
			t.Spec.Template.ObjectMeta.Labels = map[string]string{"not a key": "b"}
		}, wantErr: "spec.template.metadata.labels"},
		{name: "spec change", modify: func(t *bootstrapv1.KThreesConfigTemplate) {
			t.Spec.Template.Spec.Version = "v1.32.0+k3s1"
			t.Spec.Template.Spec.PostK3sCommands = []string{"echo"}
		}, wantErr: immutableTemplateMessage + " (changed: postK3sCommands, version)"},
		{name: "spec change in a plain dry run", dryRun: true, modify: func(t *bootstrapv1.KThreesConfigTemplate) {
			t.Spec.Template.Spec.Version = "v1.32.0+k3s1"
		}, wantErr: immutableTemplateMessage},
		{name: "annotation without dry run", modify: func(t *bootstrapv1.KThreesConfigTemplate) {
			webhooktest.SetTopologyDryRun(t)
			t.Spec.Template.Spec.Version = "v1.32.0+k3s1"
		}, wantErr: immutableTemplateMessage},
		{name: "topology dry run", dryRun: true, modify: func(t *bootstrapv1.KThreesConfigTemplate) {
			webhooktest.SetTopologyDryRun(t)
			t.Spec.Template.Spec.Version = "v1.32.0+k3s1"
		}},
		{name: "topology dry run still validates", dryRun: true, modify: func(t *bootstrapv1.KThreesConfigTemplate) {
			webhooktest.SetTopologyDryRun(t)
			t.Spec.Template.Spec.ServerConfig.AdvertisePort = "0"
		}, wantErr: "spec.template.spec.serverConfig.advertisePort"},
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
			webhooktest.CheckInvalid(t, err, tt.wantErr)
		})
	}
}
