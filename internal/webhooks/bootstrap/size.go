package bootstrap

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// inlineBudget caps what a spec carries inline into its bootstrap data: file contents,
// commands and additional user data, together. The data lands in one Secret, which the apiserver caps at
// 1 MiB; the renderer adds the cluster CA files (a few KiB), the k3s config and the
// install commands, and may grow the user's input itself: content that is not plain
// text, and gzip content, is carried base64-encoded (a third larger), and YAML
// indents every line of a block. Half of the Secret limit keeps a config that passes
// admission clear of all that. Content taken from Secrets is not known here; the
// controller checks the rendered size and reports DataSecretTooLarge.
const inlineBudget = 512 << 10

// validateInlineSize refuses a spec whose inline contents and commands exceed
// inlineBudget, naming the largest one so that the user knows what to move. Sizes
// only: inline content may be a secret.
func validateInlineSize(spec *bootstrapv1.KThreesConfigSpec, fldPath *field.Path) field.ErrorList {
	total, largest, largestPath := 0, -1, ""
	count := func(n int, p *field.Path) {
		total += n
		if n > largest {
			largest, largestPath = n, p.String()
		}
	}
	for i := range spec.Files {
		count(len(spec.Files[i].Content), fldPath.Child("files").Index(i).Child("content"))
	}
	for i, c := range spec.BootCommands {
		count(len(c), fldPath.Child("bootCommands").Index(i))
	}
	for i, c := range spec.PreK3sCommands {
		count(len(c), fldPath.Child("preK3sCommands").Index(i))
	}
	for i, c := range spec.PostK3sCommands {
		count(len(c), fldPath.Child("postK3sCommands").Index(i))
	}
	a := fldPath.Child("additionalUserData")
	count(len(spec.AdditionalUserData.CloudConfig), a.Child("cloudConfig"))
	count(len(spec.AdditionalUserData.Ignition), a.Child("ignition"))
	if total <= inlineBudget {
		return nil
	}
	err := field.TooLong(fldPath, field.OmitValueType{}, inlineBudget)
	err.Detail = fmt.Sprintf(
		"inline file contents, commands and additional user data add up to %d bytes, more than the %d that fit in bootstrap data (a Secret of at most 1 MiB, which also carries the CA files and k3s config); the largest is %s (%d bytes): put large files in the machine image or fetch them in preK3sCommands",
		total, inlineBudget, largestPath, largest)
	return field.ErrorList{err}
}
