package main

import (
	"bytes"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// TestSandboxExitWhenReady runs the sandbox as a user's script would: it must bring the
// demo cluster (3 servers, 2 agents) up, write both kubeconfigs, and stop everything
// it started before exiting 0.
func TestSandboxExitWhenReady(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a management plane and a workload cluster")
	}
	dir := filepath.Join(t.TempDir(), "sandbox")
	var stdout, stderr bytes.Buffer
	code := run([]string{"sandbox", "--exit-when-ready", "--dir", dir, "--timeout", "10m"}, nil, &stdout, &stderr)
	t.Logf("output:\n%s", stdout.String())
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	for _, want := range []string{"Applied cluster \"demo\": 3 servers", "servers 3/3 ready, agents 2/2 ready, Available=True", "Cluster \"demo\" is Available", "Stopping (--exit-when-ready)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, name := range []string{"management.kubeconfig", "demo.kubeconfig"} {
		cfg, err := clientcmd.LoadFromFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, cluster := range cfg.Clusters {
			u, err := url.Parse(cluster.Server)
			if err != nil {
				t.Fatalf("%s: server %q: %v", name, cluster.Server, err)
			}
			// Everything was stopped: nothing answers at the addresses any more.
			if conn, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
				_ = conn.Close()
				t.Errorf("%s: %s still answers after the sandbox exited", name, u.Host)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "controllers.log")); err != nil {
		t.Errorf("no controllers.log: %v", err)
	}
}

func TestSandboxRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"sandbox", "--servers", "2"},
		{"sandbox", "--servers", "0"},
		{"sandbox", "--agents", "-1"},
		{"sandbox", "extra"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, nil, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit code %d, want 2", args, code)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: started anyway: %s", args, stdout.String())
		}
	}
}
