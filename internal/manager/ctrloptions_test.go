package manager

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

func TestManagerOptionsCache(t *testing.T) {
	tests := []struct {
		name           string
		args           []string
		wantNamespaces map[string]cache.Config
		wantSync       time.Duration
	}{
		{name: "defaults watch all namespaces", args: nil, wantNamespaces: nil, wantSync: 10 * time.Minute},
		{name: "namespace restricts cache", args: []string{"--namespace=foo"}, wantNamespaces: map[string]cache.Config{"foo": {}}, wantSync: 10 * time.Minute},
		{name: "sync period", args: []string{"--sync-period=30s"}, wantNamespaces: nil, wantSync: 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := parse(t, tt.args...)
			got, err := o.ManagerOptions(runtime.NewScheme())
			if err != nil {
				t.Fatalf("ManagerOptions: %v", err)
			}
			if !reflect.DeepEqual(got.Cache.DefaultNamespaces, tt.wantNamespaces) {
				t.Errorf("DefaultNamespaces = %v, want %v", got.Cache.DefaultNamespaces, tt.wantNamespaces)
			}
			if got.Cache.SyncPeriod == nil || *got.Cache.SyncPeriod != tt.wantSync {
				t.Errorf("SyncPeriod = %v, want %s", got.Cache.SyncPeriod, tt.wantSync)
			}
		})
	}
}

func TestManagerOptionsWiring(t *testing.T) {
	o := parse(t, "--leader-elect", "--leader-elect-namespace=capk3s-system", "--concurrency=4", "--health-addr=:1234", "--webhook-port=10443", "--webhook-cert-dir=/certs")
	o.LeaderElectionID = "kthrees-test-leader-election"
	s := scheme.Scheme

	got, err := o.ManagerOptions(s)
	if err != nil {
		t.Fatalf("ManagerOptions: %v", err)
	}

	if got.Scheme != s {
		t.Error("Scheme is not the one passed in")
	}
	if !got.LeaderElection || got.LeaderElectionID != "kthrees-test-leader-election" {
		t.Errorf("LeaderElection/ID = %v/%q, want true/%q", got.LeaderElection, got.LeaderElectionID, "kthrees-test-leader-election")
	}
	if got.LeaderElectionNamespace != "capk3s-system" {
		t.Errorf("LeaderElectionNamespace = %q, want capk3s-system", got.LeaderElectionNamespace)
	}
	durations := []struct {
		name string
		got  *time.Duration
		want time.Duration
	}{
		{"LeaseDuration", got.LeaseDuration, 15 * time.Second},
		{"RenewDeadline", got.RenewDeadline, 10 * time.Second},
		{"RetryPeriod", got.RetryPeriod, 2 * time.Second},
	}
	for _, d := range durations {
		if d.got == nil || *d.got != d.want {
			t.Errorf("%s = %v, want %s", d.name, d.got, d.want)
		}
	}
	if got.HealthProbeBindAddress != ":1234" {
		t.Errorf("HealthProbeBindAddress = %q, want %q", got.HealthProbeBindAddress, ":1234")
	}
	if got.Controller.MaxConcurrentReconciles != 4 {
		t.Errorf("MaxConcurrentReconciles = %d, want 4", got.Controller.MaxConcurrentReconciles)
	}

	srv, ok := got.WebhookServer.(*webhook.DefaultServer)
	if !ok {
		t.Fatalf("WebhookServer is %T, want *webhook.DefaultServer", got.WebhookServer)
	}
	if srv.Options.Port != 10443 || srv.Options.CertDir != "/certs" ||
		srv.Options.CertName != "tls.crt" || srv.Options.KeyName != "tls.key" {
		t.Errorf("webhook options = %+v, want port 10443, cert dir /certs, tls.crt/tls.key", srv.Options)
	}
	// One TLS option for the minimum version; cipher suites and curves are unset.
	if len(srv.Options.TLSOpts) != 1 {
		t.Errorf("webhook has %d TLS options, want 1", len(srv.Options.TLSOpts))
	}

	if got.Client.Cache == nil {
		t.Fatal("Client.Cache is nil, want Secrets and ConfigMaps excluded from the cache")
	}
	var uncached []string
	for _, obj := range got.Client.Cache.DisableFor {
		uncached = append(uncached, reflect.TypeOf(obj).String())
	}
	wantUncached := []string{reflect.TypeOf(&corev1.ConfigMap{}).String(), reflect.TypeOf(&corev1.Secret{}).String()}
	if !reflect.DeepEqual(uncached, wantUncached) {
		t.Errorf("DisableFor = %v, want %v", uncached, wantUncached)
	}
}

func TestManagerOptionsMetrics(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantAddr   string
		wantSecure bool
	}{
		{name: "secure by default", args: nil, wantAddr: ":8443", wantSecure: true},
		{name: "insecure", args: []string{"--insecure-diagnostics", "--diagnostics-address=:8080"}, wantAddr: ":8080", wantSecure: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := parse(t, tt.args...)
			got, err := o.ManagerOptions(runtime.NewScheme())
			if err != nil {
				t.Fatalf("ManagerOptions: %v", err)
			}
			if got.Metrics.BindAddress != tt.wantAddr || got.Metrics.SecureServing != tt.wantSecure {
				t.Errorf("metrics = %s secure=%v, want %s secure=%v",
					got.Metrics.BindAddress, got.Metrics.SecureServing, tt.wantAddr, tt.wantSecure)
			}
			if tt.wantSecure && got.Metrics.FilterProvider == nil {
				t.Error("secure metrics have no authn/authz filter")
			}
		})
	}
}

func TestManagerOptionsRejectsBadTLS(t *testing.T) {
	o := parse(t, "--tls-min-version=VersionTLS99")
	if _, err := o.ManagerOptions(runtime.NewScheme()); err == nil {
		t.Fatal("expected an error for an unknown TLS version")
	}
}

// Shards of one binary (--watch-filter) must not share a Lease: all but one would
// wait forever.
func TestManagerOptionsLeaderElectionIDPerShard(t *testing.T) {
	const id = "kthrees-test-leader-election"
	tests := []struct {
		filter, want string
	}{
		{"", id},
		{"shard-a", id + "-shard-a"},
		{"eu.west-1", id + "-eu.west-1"},
		// Not valid in a Lease name: hashed (FNV-1a), each value to its own name.
		{"Shard_A", id + "-f5210127"},
		{"shard_a", id + "-e3d8f427"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		o := parse(t, "--leader-elect", "--watch-filter="+tt.filter)
		o.LeaderElectionID = id
		got, err := o.ManagerOptions(runtime.NewScheme())
		if err != nil {
			t.Fatalf("ManagerOptions: %v", err)
		}
		if got.LeaderElectionID != tt.want {
			t.Errorf("--watch-filter=%q: LeaderElectionID = %q, want %q", tt.filter, got.LeaderElectionID, tt.want)
		}
		if msgs := validation.IsDNS1123Subdomain(got.LeaderElectionID); len(msgs) > 0 {
			t.Errorf("--watch-filter=%q: LeaderElectionID %q is no valid Lease name: %v", tt.filter, got.LeaderElectionID, msgs)
		}
		if other, dup := seen[got.LeaderElectionID]; dup {
			t.Errorf("--watch-filter=%q and %q share the Lease %q", tt.filter, other, got.LeaderElectionID)
		}
		seen[got.LeaderElectionID] = tt.filter
	}
}
