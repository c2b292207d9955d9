package bootstrap

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
)

// namedLargestFiles is how many of the largest user files a too-large message names.
const namedLargestFiles = 3

// fitsInSecret checks the data Secret's content against the apiserver's limit before
// creating it. When it does not fit, DataSecretAvailable says why, where the user
// looks, instead of a refused create that only reaches the log; an error is returned
// too when the size depends on Secrets that no watch follows, so that shrinking them
// is picked up by a retry with backoff.
func fitsInSecret(config *bootstrapv1.KThreesConfig, secretData map[string][]byte, files []cloudinit.File) (bool, error) {
	size := dataSecretSize(secretData)
	if size <= corev1.MaxSecretSize {
		return true, nil
	}
	setCondition(config, bootstrapv1.DataSecretAvailableCondition, metav1.ConditionFalse,
		bootstrapv1.DataSecretTooLargeReason, tooLargeMessage(size, &config.Spec, files))
	if readsUnwatchedSecrets(&config.Spec) {
		return false, fmt.Errorf("bootstrap data of %d bytes does not fit in a Secret", size)
	}
	// Everything else comes from the config and the cluster, whose changes wake us.
	return false, nil
}

// dataSecretSize is what the apiserver counts against corev1.MaxSecretSize: the
// bytes of every data value, keys excluded.
func dataSecretSize(data map[string][]byte) int {
	n := 0
	for _, v := range data {
		n += len(v)
	}
	return n
}

// tooLargeMessage explains bootstrap data that no Secret can hold, naming the
// largest of the user's files, which are nearly always the cause (admission caps
// inline content, so the rest usually comes from Secrets). It carries sizes and
// paths only, never content. files are the resolved spec.files, in spec order.
func tooLargeMessage(size int, spec *bootstrapv1.KThreesConfigSpec, files []cloudinit.File) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The bootstrap data is %d bytes, more than the %d bytes a Secret can hold", size, corev1.MaxSecretSize)
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(files[b].Content), len(files[a].Content)) })
	var largest []string
	for _, i := range order[:min(len(order), namedLargestFiles)] {
		source := "inline"
		if i < len(spec.Files) && spec.Files[i].ContentFrom != nil {
			if cm := spec.Files[i].ContentFrom.ConfigMap.Name; cm != "" {
				source = "from ConfigMap " + cm
			} else {
				source = "from Secret " + spec.Files[i].ContentFrom.Secret.Name
			}
		}
		largest = append(largest, fmt.Sprintf("spec.files[%d] (%s) %d bytes %s", i, files[i].Path, len(files[i].Content), source))
	}
	if len(largest) > 0 {
		fmt.Fprintf(&b, "; largest files: %s", strings.Join(largest, ", "))
	}
	b.WriteString(". Shrink them, or put large files in the machine image or fetch them in preK3sCommands")
	return b.String()
}

// readsUnwatchedSecrets says whether the rendered data depends on Secrets or
// ConfigMaps that no watch brings the config back for (file contents, registry
// credentials): a change there is only noticed by a retry.
func readsUnwatchedSecrets(spec *bootstrapv1.KThreesConfigSpec) bool {
	for _, f := range spec.Files {
		if f.ContentFrom != nil {
			return true
		}
	}
	if regs := spec.AgentConfig.Registries; regs != nil {
		for _, rc := range regs.Configs {
			if rc.AuthSecret != nil || rc.CASecret != nil {
				return true
			}
		}
	}
	return false
}
