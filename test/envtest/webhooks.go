package envtest

import (
	"errors"
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// webhookPaths lists the generated webhook configuration directories that exist.
func webhookPaths() ([]string, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, provider := range []string{"bootstrap", "controlplane"} {
		dir := filepath.Join(root, "config", provider, "webhook")
		if _, err := os.Stat(filepath.Join(dir, "manifests.yaml")); err == nil {
			paths = append(paths, dir)
		}
	}
	if len(paths) == 0 {
		return nil, errors.New("no webhook configurations under config/*/webhook: run 'make generate'")
	}
	return paths, nil
}

// WebhookServer is a webhook server listening where the installed webhook
// configurations send requests, with envtest's serving certificate. Give it to the
// manager that registers the webhooks (ctrl.Options.WebhookServer).
func (e *Environment) WebhookServer() webhook.Server {
	o := e.env.WebhookInstallOptions
	return webhook.NewServer(webhook.Options{
		Host:    o.LocalServingHost,
		Port:    o.LocalServingPort,
		CertDir: o.LocalServingCertDir,
	})
}

// ServingCert is envtest's webhook serving certificate: the directory holding tls.crt
// and tls.key, the CA that signed it and the host it is valid for. A test's other
// HTTPS servers (a Runtime SDK extension, say) serve with it on ports of their own.
func (e *Environment) ServingCert() (certDir string, caBundle []byte, host string) {
	o := e.env.WebhookInstallOptions
	return o.LocalServingCertDir, o.LocalServingCAData, o.LocalServingHost
}
