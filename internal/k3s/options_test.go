package k3s

import (
	"encoding/json"
	"testing"
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
		{key: "secrets-encryption-provider", onServer: true},
		{key: "system-default-registry", onServer: true},
		{key: "etcd-s3-retention", onServer: true},
		{key: "etcd-s3-bucket-lookup-type", onServer: true},
		{key: "etcd-s3-session-token", onServer: true},
		{key: "etcd-snapshot-reconcile-interval", onServer: true},
		// Agent-only.
		{key: "disable-apiserver-lb", onAgent: true},
		// Real flags of both roles the earlier hand list lacked or misspelt.
		{key: "flannel-cni-conf", onServer: true, onAgent: true},
		{key: "lb-server-port", onServer: true, onAgent: true},
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
		{key: "flannel-cni-conf-dir"},
		{key: "kube-apiserver-extra-mount"},
		{key: "kube-scheduler-extra-mount"},
		{key: "helm-controller-arg"},
		{key: "write-kubeconfig-name"},
	}
	// The three supported minors have the same flags (k3s v1.34.9, v1.35.4, v1.36.2).
	for _, minor := range []int{34, 35, 36} {
		for _, tc := range tests {
			if got := KnownOption([]int{minor}, RoleServer, tc.key); got != tc.onServer {
				t.Errorf("v1.%d: KnownOption(server, %q) = %v, want %v", minor, tc.key, got, tc.onServer)
			}
			if got := KnownOption([]int{minor}, RoleAgent, tc.key); got != tc.onAgent {
				t.Errorf("v1.%d: KnownOption(agent, %q) = %v, want %v", minor, tc.key, got, tc.onAgent)
			}
		}
	}
	if KnownOption(nil, RoleServer, "token") || KnownOption([]int{33}, RoleServer, "token") {
		t.Error("KnownOption knows options of no minor, or of an unsupported one")
	}
}

// TestManagedOptionsAreKnown keeps the managed list to real options: a misspelt
// key there would let the real one through extraConfig.
func TestManagedOptionsAreKnown(t *testing.T) {
	t.Parallel()
	for key, field := range ManagedOptions {
		if !KnownOption(SupportedMinors(), RoleServer, key) {
			t.Errorf("managed option %q is no k3s option", key)
		}
		if field == "" {
			t.Errorf("managed option %q names nothing to use instead", key)
		}
	}
}
func TestOptionValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw     string
		want    any
		wantErr string
	}{
		{raw: `"vxlan"`, want: "vxlan"},
		{raw: `true`, want: true},
		{raw: `false`, want: false},
		{raw: `10250`, want: json.Number("10250")},
		{raw: `1.5`, want: json.Number("1.5")},
		{raw: `["a","b"]`, want: []any{"a", "b"}},
		{raw: `[]`, want: []any{}},
		{raw: `null`, wantErr: "must be a string, a bool, a number or a list of strings, not null"},
		{raw: `{"a":"b"}`, wantErr: "must be a string, a bool, a number or a list of strings, not an object"},
		{raw: `["a",1]`, wantErr: "must be a string, a bool, a number or a list of strings, not a list holding a number"},
		{raw: `[["a"]]`, wantErr: "must be a string, a bool, a number or a list of strings, not a list holding a list"},
		{raw: `"a" "b"`, wantErr: "must be a string, a bool, a number or a list of strings, not several JSON values"},
		{raw: ``, wantErr: "must be a string, a bool, a number or a list of strings, and is not valid JSON: EOF"},
		{raw: `nope`, wantErr: "must be a string, a bool, a number or a list of strings, and is not valid JSON: invalid character 'o' in literal null (expecting 'u')"},
	}
	for _, tc := range tests {
		got, err := OptionValue([]byte(tc.raw))
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("OptionValue(%s) error = %v, want %q", tc.raw, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("OptionValue(%s): %v", tc.raw, err)
			continue
		}
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(tc.want)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("OptionValue(%s) = %s, want %s", tc.raw, gotJSON, wantJSON)
		}
	}
}
