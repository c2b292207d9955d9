package manager

import (
	"io"
	"testing"
	"time"

	"github.com/spf13/pflag"
	logsv1 "k8s.io/component-base/logs/api/v1"
)

func TestAddFlagsDefaults(t *testing.T) {
	var o Options
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatalf("parsing no flags: %v", err)
	}

	tests := []struct {
		flag       string
		defValue   string
		got, value any
	}{
		{"leader-elect", "false", o.LeaderElect, false},
		{"leader-elect-lease-duration", "15s", o.LeaderElectLeaseDuration, 15 * time.Second},
		{"leader-elect-renew-deadline", "10s", o.LeaderElectRenewDeadline, 10 * time.Second},
		{"leader-elect-retry-period", "2s", o.LeaderElectRetryPeriod, 2 * time.Second},
		{"leader-elect-namespace", "", o.LeaderElectNamespace, ""},
		{"namespace", "", o.WatchNamespace, ""},
		{"watch-filter", "", o.WatchFilterValue, ""},
		{"health-addr", ":9440", o.HealthAddr, ":9440"},
		{"webhook-port", "9443", o.WebhookPort, 9443},
		{"webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs/", o.WebhookCertDir, "/tmp/k8s-webhook-server/serving-certs/"},
		{"webhook-cert-name", "tls.crt", o.WebhookCertName, "tls.crt"},
		{"webhook-key-name", "tls.key", o.WebhookKeyName, "tls.key"},
		{"kube-api-qps", "100", o.KubeAPIQPS, float32(100)},
		{"kube-api-burst", "200", o.KubeAPIBurst, 200},
		{"concurrency", "10", o.Concurrency, 10},
		{"sync-period", "10m0s", o.SyncPeriod, 10 * time.Minute},
		{"min-pass-interval", "0s", o.MinPassInterval, time.Duration(0)},
		{"diagnostics-address", ":8443", o.Diagnostics.DiagnosticsAddress, ":8443"},
		{"insecure-diagnostics", "false", o.Diagnostics.InsecureDiagnostics, false},
		{"tls-min-version", "VersionTLS12", o.Diagnostics.TLSMinVersion, "VersionTLS12"},
		{"feature-gates", "", fs.Lookup("feature-gates").Value.String(), ""},
		{"v", "2", o.Logs.Verbosity, logsv1.VerbosityLevel(2)},
		{"logging-format", "text", o.Logs.Format, "text"},
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			f := fs.Lookup(tt.flag)
			if f == nil {
				t.Fatalf("flag --%s is not registered", tt.flag)
			}
			if f.DefValue != tt.defValue {
				t.Errorf("--%s documented default = %q, want %q", tt.flag, f.DefValue, tt.defValue)
			}
			if tt.got != tt.value {
				t.Errorf("--%s parsed default = %#v, want %#v", tt.flag, tt.got, tt.value)
			}
		})
	}
}

func TestAddFlagsParsesValues(t *testing.T) {
	o := parse(t,
		"--leader-elect",
		"--namespace=foo",
		"--watch-filter=team-a",
		"--concurrency=3",
		"--sync-period=30s",
		"--min-pass-interval=1s",
		"--webhook-port=10443",
		"--insecure-diagnostics",
	)

	tests := []struct {
		name      string
		got, want any
	}{
		{"leader-elect", o.LeaderElect, true},
		{"namespace", o.WatchNamespace, "foo"},
		{"watch-filter", o.WatchFilterValue, "team-a"},
		{"concurrency", o.Concurrency, 3},
		{"sync-period", o.SyncPeriod, 30 * time.Second},
		{"min-pass-interval", o.MinPassInterval, time.Second},
		{"webhook-port", o.WebhookPort, 10443},
		{"insecure-diagnostics", o.Diagnostics.InsecureDiagnostics, true},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("--%s = %#v, want %#v", tt.name, tt.got, tt.want)
		}
	}
}

// No gates are registered yet, so naming any gate must fail at parse time
// rather than being silently ignored.
func TestFeatureGatesRejectUnknownGate(t *testing.T) {
	var o Options
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // the expected parse error would otherwise print usage
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--feature-gates=NoSuchGate=true"}); err == nil {
		t.Fatal("expected an error for an unregistered feature gate")
	}
}
