package webhookutil

import (
	"context"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/capk3s/capk3s/test/webhooktest"
)

// spec stands in for a template's spec.template.spec.
type spec struct {
	Version  string             `json:"version,omitempty"`
	Commands []string           `json:"commands,omitempty"`
	Size     *resource.Quantity `json:"size,omitempty"`
}

const message = "spec.template.spec is immutable"

func TestChangedFields(t *testing.T) {
	tests := []struct {
		name     string
		old, new spec
		want     []string
	}{
		{name: "equal", old: spec{Version: "v1"}, new: spec{Version: "v1"}},
		{name: "semantically equal", old: spec{Size: ptr.To(resource.MustParse("1"))}, new: spec{Size: ptr.To(resource.MustParse("1000m"))}},
		{name: "changed, sorted", old: spec{Version: "v1", Commands: []string{"a"}}, new: spec{Version: "v2", Commands: []string{"b"}},
			want: []string{"commands", "version"}},
		{name: "added", old: spec{}, new: spec{Commands: []string{"a"}}, want: []string{"commands"}},
		{name: "removed", old: spec{Version: "v1"}, new: spec{}, want: []string{"version"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := changedFields(&tt.old, &tt.new); !slices.Equal(got, tt.want) {
				t.Errorf("changedFields = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValidateTemplateSpecUpdate(t *testing.T) {
	// validate rejects commands, to show when the changed spec is validated.
	validate := func(s *spec, path *field.Path) field.ErrorList {
		if len(s.Commands) > 0 {
			return field.ErrorList{field.Invalid(path.Child("commands"), s.Commands, "not allowed")}
		}
		return nil
	}
	old := spec{Version: "v1"}

	tests := []struct {
		name       string
		ctx        context.Context
		annotation bool
		new        spec
		want       string // a fragment of the only error; empty means allowed
	}{
		{name: "unchanged, no request needed", ctx: context.Background(), new: old},
		{name: "change", ctx: webhooktest.UpdateRequest(false), new: spec{Version: "v2", Commands: []string{"x"}},
			want: "spec.template.spec: Forbidden: " + message + " (changed: commands, version)"},
		{name: "change in a plain dry run", ctx: webhooktest.UpdateRequest(true), new: spec{Version: "v2"},
			want: "spec.template.spec: Forbidden: " + message + " (changed: version)"},
		{name: "annotation without dry run", ctx: webhooktest.UpdateRequest(false), annotation: true, new: spec{Version: "v2"},
			want: message},
		{name: "topology dry run", ctx: webhooktest.UpdateRequest(true), annotation: true, new: spec{Version: "v2"}},
		{name: "topology dry run still validates", ctx: webhooktest.UpdateRequest(true), annotation: true, new: spec{Version: "v1", Commands: []string{"x"}},
			want: "spec.template.spec.commands: Invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{Name: "t"}
			if tt.annotation {
				webhooktest.SetTopologyDryRun(obj)
			}
			errs, err := ValidateTemplateSpecUpdate(tt.ctx, obj, &old, &tt.new, message, validate)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Errorf("rejected: %v", errs)
			case tt.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.want)):
				t.Errorf("got %v, want one error containing %q", errs, tt.want)
			}
		})
	}

	// A change cannot be judged without the request: that is the webhook's fault.
	_, err := ValidateTemplateSpecUpdate(context.Background(), &metav1.ObjectMeta{}, &old, &spec{Version: "v2"}, message, validate)
	if !apierrors.IsInternalError(err) {
		t.Errorf("without an admission request: got %v, want an internal error", err)
	}
}

func TestValidateTemplateMetadataUpdate(t *testing.T) {
	// Invalid metadata already stored is left alone while it does not change.
	stored := &clusterv1.ObjectMeta{Labels: map[string]string{"not a key": "b"}}
	if errs := ValidateTemplateMetadataUpdate(stored, stored.DeepCopy()); len(errs) > 0 {
		t.Errorf("unchanged metadata rejected: %v", errs)
	}
	changed := &clusterv1.ObjectMeta{Labels: map[string]string{"not a key": "c"}}
	errs := ValidateTemplateMetadataUpdate(stored, changed)
	if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "spec.template.metadata.labels") {
		t.Errorf("changed invalid metadata: got %v, want an error on spec.template.metadata.labels", errs)
	}
	if errs := ValidateTemplateMetadataUpdate(stored, &clusterv1.ObjectMeta{Labels: map[string]string{"a": "b"}}); len(errs) > 0 {
		t.Errorf("change to valid metadata rejected: %v", errs)
	}
}

func TestInvalid(t *testing.T) {
	kind := schema.GroupKind{Group: "example.com", Kind: "Template"}
	if err := Invalid(kind, "t", nil); err != nil {
		t.Errorf("no errors: got %v, want nil", err)
	}
	err := Invalid(kind, "t", field.ErrorList{field.Required(field.NewPath("spec"), "")})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `Template.example.com "t" is invalid`) {
		t.Errorf("got %v, want Invalid for Template.example.com t", err)
	}
}
