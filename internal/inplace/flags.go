package inplace

import (
	"crypto/tls"

	"github.com/spf13/pflag"
)

// Flags are the control-plane manager's settings of the extension.
type Flags struct {
	// Port serves the extension; 0 turns it off, and so does the InPlaceUpdates gate
	// when off.
	Port int
	// CertDir holds the serving certificate; "" is the webhook server's directory.
	CertDir string
	// UpgradeImage is the image SUC's upgrade Jobs run, without tag.
	UpgradeImage string
	// ClientCAFiles are the CA bundles the callers' client certificates must chain to.
	ClientCAFiles []string
	// ClientCertFile and ClientKeyFile are the client certificate this manager presents
	// when it calls extensions itself (CanUpdateMachine), as CAPI's managers'
	// flags of the same names.
	ClientCertFile, ClientKeyFile string
}

// AddFlags binds the flags on fs.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&f.Port, "runtime-extension-port", 0,
		"Port of the k3s in-place update Runtime Extension (CAPI's InPlaceUpdates); served only with the InPlaceUpdates feature gate on; 0 turns it off.")
	fs.StringVar(&f.CertDir, "runtime-extension-cert-dir", "",
		"Directory holding the Runtime Extension's serving certificate (tls.crt, tls.key); empty means --webhook-cert-dir.")
	fs.StringSliceVar(&f.ClientCAFiles, "runtime-extension-client-ca-file", nil,
		"PEM bundle of the CAs that sign the client certificates of the extension's callers (CAPI core, this manager); required with the extension on. Repeat or separate by commas for several.")
	fs.StringVar(&f.ClientCertFile, "runtime-extension-client-cert-file", "",
		"Path of the PEM-encoded client certificate this manager presents when calling Runtime Extensions.")
	fs.StringVar(&f.ClientKeyFile, "runtime-extension-client-key-file", "",
		"Path of the PEM-encoded client key this manager presents when calling Runtime Extensions.")
	fs.StringVar(&f.UpgradeImage, "runtime-extension-upgrade-image", DefaultImage,
		"Image, without tag, that the system-upgrade-controller Plans run to upgrade k3s on a node (the tag is the k3s version).")
}

// WebhookCert is where the manager's webhook server finds its certificate.
type WebhookCert struct{ Dir, CertName, KeyName string }

// Options are the ExtensionOptions the flags give: by default the webhook server's
// certificate (one cert-manager Certificate covers the Service both are behind), the
// manager's TLS settings, and the ClusterCache.
func (f *Flags) Options(webhook WebhookCert, tlsOpts []func(*tls.Config), workload WorkloadClients) ExtensionOptions {
	o := ExtensionOptions{Port: f.Port, CertDir: f.CertDir, TLSOpts: tlsOpts, Workload: workload, Image: f.UpgradeImage,
		ClientCAFiles: f.ClientCAFiles}
	if o.CertDir == "" {
		o.CertDir, o.CertName, o.KeyName = webhook.Dir, webhook.CertName, webhook.KeyName
	}
	return o
}
