package bootstrap

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// specOfInlineSize returns validSpec with its inline contents and commands grown so
// that together they count exactly n bytes, most of them in files[0].content.
func specOfInlineSize(n int) bootstrapv1.KThreesConfigSpec {
	spec := validSpec()
	rest := inlineSize(&spec) - len(spec.Files[0].Content)
	spec.Files[0].Content = strings.Repeat("x", n-rest)
	return spec
}

// inlineSize is the test's own count of what the budget covers.
func inlineSize(spec *bootstrapv1.KThreesConfigSpec) int {
	n := 0
	for _, f := range spec.Files {
		n += len(f.Content)
	}
	for _, c := range append(append(append([]string{}, spec.BootCommands...), spec.PreK3sCommands...), spec.PostK3sCommands...) {
		n += len(c)
	}
	return n
}

// Bootstrap data lives in a Secret of at most 1 MiB: a spec whose inline contents and
// commands cannot fit is refused at admission, not when its machine is created.
func TestValidateSpecInlineBudget(t *testing.T) {
	// The documented budget (docs/reference.md), well below the 1 MiB Secret limit.
	const budget = 512 << 10
	t.Run("at the budget", func(t *testing.T) {
		spec := specOfInlineSize(budget)
		checkErrors(t, validateSpec(&spec, field.NewPath("spec")), nil)
	})
	t.Run("one byte over, in a file", func(t *testing.T) {
		spec := specOfInlineSize(budget + 1)
		errs := validateSpec(&spec, field.NewPath("spec"))
		checkErrors(t, errs, []wantErr{{"spec", "Too long: inline file contents, commands and additional user data add up to 524289 bytes"}})
		if !strings.Contains(errs[0].Error(), "the largest is spec.files[0].content") {
			t.Errorf("error does not name the largest contributor: %v", errs[0])
		}
		if strings.Contains(errs[0].Error(), "xxxx") {
			t.Errorf("error echoes the content: %.200s", errs[0].Error())
		}
	})
	t.Run("over in commands", func(t *testing.T) {
		spec := validSpec()
		spec.PostK3sCommands = []string{"echo small", "echo " + strings.Repeat("y", budget)}
		errs := validateSpec(&spec, field.NewPath("spec", "kthreesConfigSpec"))
		checkErrors(t, errs, []wantErr{{"spec.kthreesConfigSpec", "the largest is spec.kthreesConfigSpec.postK3sCommands[1]"}})
	})
	t.Run("over with a cloud-config fragment", func(t *testing.T) {
		spec := specOfInlineSize(budget - 20)
		spec.AdditionalUserData.CloudConfig = "final_message: " + strings.Repeat("z", 20)
		errs := validateSpec(&spec, field.NewPath("spec"))
		checkErrors(t, errs, []wantErr{{"spec", "add up to 524303 bytes"}})
	})
}
