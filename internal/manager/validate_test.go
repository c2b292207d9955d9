package manager

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// wantErr is a substring the error must contain; empty means valid.
		wantErr string
	}{
		{name: "defaults", args: nil},
		{name: "leader election with ID", args: []string{"--leader-elect"}},
		{name: "namespace and filter", args: []string{"--namespace=foo", "--watch-filter=team-a"}},
		{name: "zero concurrency", args: []string{"--concurrency=0"}, wantErr: "--concurrency must be at least 1, got 0"},
		{name: "negative concurrency", args: []string{"--concurrency=-2"}, wantErr: "--concurrency must be at least 1, got -2"},
		{name: "zero qps", args: []string{"--kube-api-qps=0"}, wantErr: "--kube-api-qps must be greater than 0"},
		{name: "zero burst", args: []string{"--kube-api-burst=0"}, wantErr: "--kube-api-burst must be at least 1, got 0"},
		{name: "negative sync period", args: []string{"--sync-period=-1m"}, wantErr: "--sync-period must be positive, got -1m0s"},
		{name: "zero sync period", args: []string{"--sync-period=0s"}, wantErr: "--sync-period must be positive, got 0s"},
		{name: "pacing on", args: []string{"--min-pass-interval=1s"}},
		{name: "pacing off", args: []string{"--min-pass-interval=0s"}},
		{name: "skip a CRD migration phase", args: []string{"--skip-crd-migration-phases=CleanupManagedFields,StorageVersionMigration"}},
		{name: "unknown CRD migration phase", args: []string{"--skip-crd-migration-phases=All"}, wantErr: `--skip-crd-migration-phases: "All" is not a phase (StorageVersionMigration, CleanupManagedFields)`},
		{name: "negative min pass interval", args: []string{"--min-pass-interval=-1s"}, wantErr: "--min-pass-interval must not be negative (0 turns pacing off), got -1s"},
		{name: "lease not above renew", args: []string{"--leader-elect-lease-duration=10s"}, wantErr: "--leader-elect-lease-duration (10s) must be greater than --leader-elect-renew-deadline (10s)"},
		{name: "renew too close to retry", args: []string{"--leader-elect-retry-period=9s"}, wantErr: "--leader-elect-renew-deadline (10s) must be greater than 1.2 times --leader-elect-retry-period (9s)"},
		{name: "zero retry", args: []string{"--leader-elect-retry-period=0s"}, wantErr: "--leader-elect-retry-period must be positive"},
		{name: "webhook port out of range", args: []string{"--webhook-port=70000"}, wantErr: "--webhook-port must be between 1 and 65535, got 70000"},
		{name: "bad namespace", args: []string{"--namespace=Not_A_Namespace"}, wantErr: `--namespace "Not_A_Namespace" is not a valid namespace name`},
		{name: "bad watch filter", args: []string{"--watch-filter=has space"}, wantErr: `--watch-filter "has space" is not a valid label value`},
		{name: "bad TLS version", args: []string{"--tls-min-version=VersionTLS99"}, wantErr: "invalid TLS or diagnostics flags"},
		{name: "json log format", args: []string{"--logging-format=json", "-v=4"}},
		{name: "bad log format", args: []string{"--logging-format=xml"}, wantErr: "invalid logging flags"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := parse(t, tt.args...)
			o.LeaderElectionID = "test-leader-election"
			err := o.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("expected error containing %q, got nil", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestValidateRequiresLeaderElectionID(t *testing.T) {
	o := parse(t, "--leader-elect")
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "no leader election ID") {
		t.Fatalf("got %v, want an error about the missing leader election ID", err)
	}
}

func TestValidateReportsAllErrors(t *testing.T) {
	o := parse(t, "--concurrency=0", "--kube-api-burst=0")
	err := o.Validate()
	if err == nil {
		t.Fatal("expected an error")
	}
	for _, want := range []string{"--concurrency", "--kube-api-burst"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}
