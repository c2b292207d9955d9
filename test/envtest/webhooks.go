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

// WebhookServingCert is where WebhookServer's serving certificate and key are
// (tls.crt, tls.key) and the CA that signed them: another TLS server of a test, such
// as a Runtime Extension, can serve with the same certificate.
func (e *Environment) WebhookServingCert() (certDir string, caPEM []byte) {
	o := e.env.WebhookInstallOptions
	return o.LocalServingCertDir, o.LocalServingCAData
}
