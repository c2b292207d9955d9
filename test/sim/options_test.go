package sim

import (
	"testing"

	"github.com/capk3s/capk3s/internal/cloudinit"
)

func TestKnownOption(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key               string
		onServer, onAgent bool
	}{
		// Options of both roles.
		{key: "token", onServer: true, onAgent: true},
		{key: "server", onServer: true, onAgent: true},
		{key: "node-name", onServer: true, onAgent: true},
		{key: "node-label", onServer: true, onAgent: true},
		{key: "node-taint", onServer: true, onAgent: true},
		{key: "kubelet-arg", onServer: true, onAgent: true},
		{key: "kube-proxy-arg", onServer: true, onAgent: true},
		{key: "private-registry", onServer: true, onAgent: true},
		{key: "system-default-registry", onServer: true, onAgent: true},
		{key: "node-ip", onServer: true, onAgent: true},
		{key: "data-dir", onServer: true, onAgent: true},
		{key: "selinux", onServer: true, onAgent: true},
		{key: "vpn-auth-file", onServer: true, onAgent: true},
		// Server-only options.
		{key: "cluster-init", onServer: true},
		{key: "agent-token", onServer: true},
		{key: "tls-san", onServer: true},
		{key: "disable", onServer: true},
		{key: "disable-cloud-controller", onServer: true},
		{key: "https-listen-port", onServer: true},
		{key: "advertise-port", onServer: true},
		{key: "advertise-address", onServer: true},
		{key: "cluster-cidr", onServer: true},
		{key: "service-cidr", onServer: true},
		{key: "cluster-dns", onServer: true},
		{key: "cluster-domain", onServer: true},
		{key: "kube-apiserver-arg", onServer: true},
		{key: "kube-controller-manager-arg", onServer: true},
		{key: "kube-scheduler-arg", onServer: true},
		{key: "etcd-s3-bucket", onServer: true},
		{key: "datastore-endpoint", onServer: true},
		{key: "write-kubeconfig-mode", onServer: true},
		{key: "secrets-encryption", onServer: true},
		// "+" appends to a list: the option's own name decides.
		{key: "node-label+", onServer: true, onAgent: true},
		{key: "kubelet-arg+", onServer: true, onAgent: true},
		{key: "tls-san+", onServer: true},
		{key: "kube-apiserver-arg+", onServer: true},
		// Not options at all.
		{key: "+"},
		{key: ""},
		{key: "tls-sans"},
		{key: "node_name"},
		{key: "Token"},
		{key: "--token"},
		{key: "node-label++"},
		{key: "+node-label"},
		{key: "cluster-init+x"},
		{key: "kubeconfig"},
	}
	for _, tc := range tests {
		if got := knownOption(roleServer, tc.key); got != tc.onServer {
			t.Errorf("knownOption(server, %q) = %v, want %v", tc.key, got, tc.onServer)
		}
		if got := knownOption(roleAgent, tc.key); got != tc.onAgent {
			t.Errorf("knownOption(agent, %q) = %v, want %v", tc.key, got, tc.onAgent)
		}
		// An unknown role gets the options every k3s subcommand takes, and no more.
		if got := knownOption("etcd", tc.key); got != tc.onAgent {
			t.Errorf("knownOption(etcd, %q) = %v, want %v", tc.key, got, tc.onAgent)
		}
	}
}

// TestOptionSetsAreDisjoint keeps every option in one list only: servers take both,
// so one listed twice is a mistake about which role takes it.
func TestOptionSetsAreDisjoint(t *testing.T) {
	t.Parallel()
	if len(agentOptions) < 40 || len(serverOnlyOptions) < 60 {
		t.Fatalf("option sets have %d agent and %d server-only options: the lists did not parse", len(agentOptions), len(serverOnlyOptions))
	}
	for key := range serverOnlyOptions {
		if agentOptions[key] {
			t.Errorf("%q is both an agent option and a server-only option", key)
		}
	}
}

func TestOptionSet(t *testing.T) {
	t.Parallel()
	got := optionSet("\n\t a  b\n\tc a\n")
	if len(got) != 3 || !got["a"] || !got["b"] || !got["c"] || got[""] {
		t.Errorf(`optionSet = %v, want {a, b, c}`, got)
	}
}

// TestRendererOptionsAreKnown checks every option the renderer can write, with all
// of the spec's fields set, against the simulator's lists for its role.
func TestRendererOptionsAreKnown(t *testing.T) {
	t.Parallel()
	ca := mustCAs(t, theCAs)
	for _, role := range []cloudinit.Role{cloudinit.ServerInit, cloudinit.ServerJoin, cloudinit.Agent} {
		in := fullInput(role, ca)
		b, _ := parseRendered(t, mustRender(t, in))
		wantRole := roleServer
		if role == cloudinit.Agent {
			wantRole = roleAgent
		}
		if b.install.role != wantRole {
			t.Errorf("%s: install role = %q, want %q", role, b.install.role, wantRole)
		}
		if len(b.k3sConfig) < 8 {
			t.Errorf("%s: only %d k3s options rendered (%v): the spec did not set them all", role, len(b.k3sConfig), b.k3sConfig)
		}
		for key := range b.k3sConfig {
			if !knownOption(wantRole, key) {
				t.Errorf("%s: the renderer writes %q, which the simulator says k3s %s does not take", role, key, wantRole)
			}
		}
	}
}
