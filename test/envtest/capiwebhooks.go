package envtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// capiWebhookPrefix names the installed configurations of CAPI core's webhooks:
// CAPI generates the same names as capk3s's bootstrap provider
// ("mutating-webhook-configuration"), and envtest would overwrite one with the other.
const capiWebhookPrefix = "capi-core-"

// addCAPIWebhooks adds CAPI core's webhook configurations (its
// config/webhook/manifests.yaml at the version go.mod pins) to what envtest installs,
// pointed like capk3s's at the local webhook server, where the manager must serve
// them (stack.Options.CAPIWebhooks).
func addCAPIWebhooks(o *envtest.WebhookInstallOptions) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	dir, err := capiModuleDir(root)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "core", "config", "webhook", "manifests.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("CAPI core's webhook configurations: %w", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		raw := map[string]any{}
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("%s: %w", path, err)
		}
		switch raw["kind"] {
		case "MutatingWebhookConfiguration":
			c := &admissionv1.MutatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, c); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			c.Name = capiWebhookPrefix + c.Name
			o.MutatingWebhooks = append(o.MutatingWebhooks, c)
		case "ValidatingWebhookConfiguration":
			c := &admissionv1.ValidatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, c); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			c.Name = capiWebhookPrefix + c.Name
			o.ValidatingWebhooks = append(o.ValidatingWebhooks, c)
		}
	}
	if len(o.MutatingWebhooks) == 0 || len(o.ValidatingWebhooks) == 0 {
		return fmt.Errorf("%s: no webhook configurations", path)
	}
	return nil
}
