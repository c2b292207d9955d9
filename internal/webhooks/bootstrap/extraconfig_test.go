package bootstrap

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func extra(kv ...string) map[string]apiextensionsv1.JSON {
	m := map[string]apiextensionsv1.JSON{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = apiextensionsv1.JSON{Raw: []byte(kv[i+1])}
	}
	return m
}

func TestValidateExtraConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		server, agent map[string]apiextensionsv1.JSON
		want          []string
	}{
		{name: "none"},
		{
			name:   "options of each role, every kind of value",
			server: extra("flannel-backend", `"wireguard-native"`, "secrets-encryption", `true`, "etcd-arg", `["quota-backend-bytes=8589934592"]`, "node-ip", `"10.0.0.5"`),
			agent:  extra("node-ip", `"10.0.0.5,2001:db8::5"`, "node-external-ip", `["1.2.3.4"]`, "selinux", `true`, "lb-server-port", `6444`, "flannel-cni-conf", `"/etc/cni.conf"`),
		},
		{
			name:   "k3s's append syntax on a known option",
			server: extra("etcd-arg+", `["a=b"]`),
			agent:  extra("node-external-ip+", `["1.2.3.4"]`),
		},
		{
			name:   "unknown keys",
			server: extra("flannel_backend", `"vxlan"`, "--secrets-encryption", `true`),
			agent:  extra("node-ipp", `"10.0.0.5"`),
			want: []string{
				`spec.serverConfig.extraConfig[--secrets-encryption]: Invalid value: "--secrets-encryption": not a k3s server option (k3s v1.34)`,
				`spec.serverConfig.extraConfig[flannel_backend]: Invalid value: "flannel_backend": not a k3s server option (k3s v1.34)`,
				`spec.agentConfig.extraConfig[node-ipp]: Invalid value: "node-ipp": not a k3s agent option (k3s v1.34); k3s agent exits on a config key it does not know`,
			},
		},
		{
			name:  "a server-only option in the agent map",
			agent: extra("flannel-backend", `"vxlan"`),
			want: []string{
				`spec.agentConfig.extraConfig[flannel-backend]: Invalid value: "flannel-backend": not a k3s agent option; server-only options go in serverConfig.extraConfig (k3s v1.34); k3s agent exits on a config key it does not know`,
			},
		},
		{
			name:   "options capk3s manages",
			server: extra("tls-san", `["a"]`, "cluster-init", `true`, "datastore-endpoint", `"mysql://"`, "kube-apiserver-arg+", `["x=y"]`),
			agent:  extra("node-label", `["a=b"]`, "token", `"t"`, "data-dir", `"/data"`, "kubelet-arg", `["x=y"]`),
			want: []string{
				`spec.serverConfig.extraConfig[cluster-init]: Forbidden: capk3s sets k3s's cluster-init itself; use the control plane (it starts etcd on the first server) instead`,
				`spec.serverConfig.extraConfig[datastore-endpoint]: Forbidden: capk3s sets k3s's datastore-endpoint itself; use serverConfig.datastore instead`,
				`spec.serverConfig.extraConfig[kube-apiserver-arg+]: Forbidden: capk3s sets k3s's kube-apiserver-arg itself; use serverConfig.kubeAPIServerArg instead`,
				`spec.serverConfig.extraConfig[tls-san]: Forbidden: capk3s sets k3s's tls-san itself; use serverConfig.tlsSan instead`,
				`spec.agentConfig.extraConfig[data-dir]: Forbidden: capk3s sets k3s's data-dir itself; use the default data directory (capk3s writes files under it) instead`,
				`spec.agentConfig.extraConfig[kubelet-arg]: Forbidden: capk3s sets k3s's kubelet-arg itself; use agentConfig.kubeletArgs instead`,
				`spec.agentConfig.extraConfig[node-label]: Forbidden: capk3s sets k3s's node-label itself; use agentConfig.nodeLabels instead`,
				`spec.agentConfig.extraConfig[token]: Forbidden: capk3s sets k3s's token itself; use the cluster's join token Secret instead`,
			},
		},
		{
			// k3s's hidden supervisor-port (pkg/cli/cmds/server.go, v1.34-v1.36) moves the
			// supervisor off the https port, which is the one capk3s reaches it on.
			name:   "an option capk3s cannot honour",
			server: extra("supervisor-port", `9345`, "supervisor-port+", `9346`),
			want: []string{
				`spec.serverConfig.extraConfig[supervisor-port]: Forbidden: ` + supervisorPortWhy,
				`spec.serverConfig.extraConfig[supervisor-port+]: Forbidden: ` + supervisorPortWhy,
			},
		},
		{
			name:   "values k3s cannot take",
			server: extra("etcd-s3-timeout", `{"a":"b"}`, "etcd-arg", `["a",1]`, "write-kubeconfig-mode", `null`),
			agent:  extra("vpn-auth", ``),
			want: []string{
				`spec.serverConfig.extraConfig[etcd-arg]: Invalid value: must be a string, a bool, a number or a list of strings, not a list holding a number`,
				`spec.serverConfig.extraConfig[etcd-s3-timeout]: Invalid value: must be a string, a bool, a number or a list of strings, not an object`,
				`spec.serverConfig.extraConfig[write-kubeconfig-mode]: Invalid value: must be a string, a bool, a number or a list of strings, not null`,
				`spec.agentConfig.extraConfig[vpn-auth]: Invalid value: must be a string, a bool, a number or a list of strings, and is not valid JSON: EOF`,
			},
		},
	}
	tests = append(tests, k3sFlagCases...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := validSpec()
			spec.ServerConfig.ExtraConfig = tc.server
			spec.AgentConfig.ExtraConfig = tc.agent
			errs := ValidateSpec(&spec, field.NewPath("spec"))
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors, want %d: %v", len(errs), len(tc.want), errs)
			}
			for i, err := range errs {
				if err.Error() != tc.want[i] {
					t.Errorf("error %d:\n got %s\nwant %s", i, err.Error(), tc.want[i])
				}
			}
		})
	}
}

// supervisorPortWhy is the refusal of k3s's supervisor-port, as users read it.
const supervisorPortWhy = "capk3s does not support k3s's supervisor-port: it reaches k3s's supervisor (joins, the registration check, etcd snapshots and restores) on the control plane endpoint's port, which is the https port (serverConfig.httpsListenPort); a supervisor on another port would be unreachable to all of them"

// k3sFlagCases are options k3s's own source (pkg/cli/cmds, v1.34-v1.36) refuses or
// takes, where the earlier hand-written list said otherwise.
var k3sFlagCases = []struct {
	name          string
	server, agent map[string]apiextensionsv1.JSON
	want          []string
}{
	{
		name:  "flags k3s does not have",
		agent: extra("flannel-cni-conf-dir", `"/etc/cni"`),
		server: extra("kube-apiserver-extra-mount", `"/a:/b"`, "kube-scheduler-extra-mount", `"/a:/b"`,
			"disable-apiserver-lb", `true`),
		want: []string{
			`spec.serverConfig.extraConfig[disable-apiserver-lb]: Invalid value: "disable-apiserver-lb": not a k3s server option (k3s v1.34)`,
			`spec.serverConfig.extraConfig[kube-apiserver-extra-mount]: Invalid value: "kube-apiserver-extra-mount": not a k3s server option (k3s v1.34)`,
			`spec.serverConfig.extraConfig[kube-scheduler-extra-mount]: Invalid value: "kube-scheduler-extra-mount": not a k3s server option (k3s v1.34)`,
			`spec.agentConfig.extraConfig[flannel-cni-conf-dir]: Invalid value: "flannel-cni-conf-dir": not a k3s agent option (k3s v1.34); k3s agent exits on a config key it does not know`,
		},
	},
	{
		name: "real flags",
		server: extra("etcd-s3-retention", `3`, "etcd-s3-bucket-lookup-type", `"path"`, "etcd-s3-session-token", `"x"`,
			"etcd-snapshot-reconcile-interval", `"15m"`, "secrets-encryption-provider", `"secretbox"`, "flannel-cni-conf", `"/c"`),
	},
	{
		name:   "values of the wrong type",
		server: extra("etcd-snapshot-reconcile-interval", `"15"`, "etcd-s3-retention", `"three"`),
		agent:  extra("lb-server-port", `"abc"`, "selinux", `"maybe"`),
		want: []string{
			`spec.serverConfig.extraConfig[etcd-s3-retention]: Invalid value: k3s v1.34's etcd-s3-retention takes a whole number; the value given is not one, and k3s would not start`,
			`spec.serverConfig.extraConfig[etcd-snapshot-reconcile-interval]: Invalid value: k3s v1.34's etcd-snapshot-reconcile-interval takes a duration such as 10m or 1h30m; the value given is not one, and k3s would not start`,
			`spec.agentConfig.extraConfig[lb-server-port]: Invalid value: k3s v1.34's lb-server-port takes a whole number; the value given is not one, and k3s would not start`,
			`spec.agentConfig.extraConfig[selinux]: Invalid value: k3s v1.34's selinux takes a bool (true or false); the value given is not one, and k3s would not start`,
		},
	},
	{
		name:  "short forms of managed options",
		agent: extra("s", `"https://elsewhere:6443"`, "t", `"x"`),
		want: []string{
			`spec.agentConfig.extraConfig[s]: Invalid value: "s": is k3s's short form of server; write server`,
			`spec.agentConfig.extraConfig[t]: Invalid value: "t": is k3s's short form of token; write token`,
		},
	},
}

func TestNodeLabelsTheKubeletRefuses(t *testing.T) {
	t.Parallel()
	spec := validSpec()
	spec.AgentConfig.NodeLabels = []string{"tier=web", "node-role.kubernetes.io/worker=true", "node.kubernetes.io/pool=a"}
	errs := ValidateSpec(&spec, field.NewPath("spec"))
	if len(errs) != 1 || errs[0].Field != "spec.agentConfig.nodeLabels[1]" || !strings.Contains(errs[0].Detail, "kubelet refuses to start with node-role.kubernetes.io/worker") {
		t.Errorf("errors = %v, want one naming spec.agentConfig.nodeLabels[1]", errs)
	}
}

func TestDisableEtcd(t *testing.T) {
	t.Parallel()
	spec := validSpec()
	spec.ServerConfig.ExtraConfig = extra("disable-etcd", `true`)
	if errs := ValidateSpec(&spec, field.NewPath("spec")); len(errs) != 0 {
		t.Errorf("a joining server may run without etcd: %v", errs)
	}
	errs := ValidateControlPlaneExtraConfig(&spec, field.NewPath("spec", "kthreesConfigSpec"))
	if len(errs) != 1 || errs[0].Field != "spec.kthreesConfigSpec.serverConfig.extraConfig[disable-etcd]" {
		t.Errorf("a control plane's servers (its first one) cannot run without etcd: %v", errs)
	}
	spec.ServerConfig.ExtraConfig = extra("disable-etcd", `"false"`)
	if errs := ValidateControlPlaneExtraConfig(&spec, field.NewPath("spec")); len(errs) != 0 {
		t.Errorf("disable-etcd: false refused: %v", errs)
	}
}

func TestVersionOutsideSupportedMinorsWarns(t *testing.T) {
	t.Parallel()
	spec := validSpec()
	spec.ServerConfig.ExtraConfig, spec.AgentConfig.ExtraConfig = nil, nil
	if w := K3sVersionWarnings(&spec, "v1.31.4+k3s1", field.NewPath("spec", "version")); len(w) != 0 {
		t.Errorf("warnings without options to check: %v", w)
	}
	spec.AgentConfig.ExtraConfig = extra("selinux", `true`)
	if w := K3sVersionWarnings(&spec, "v1.31.4+k3s1", field.NewPath("spec", "version")); len(w) != 1 || !strings.Contains(w[0], "checked against v1.34's") {
		t.Errorf("warnings = %v", w)
	}
	if w := K3sVersionWarnings(&spec, "v1.35.4+k3s1", field.NewPath("spec", "version")); len(w) != 0 {
		t.Errorf("warnings for a supported minor: %v", w)
	}
}
