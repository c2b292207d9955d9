package bootstrap

import (
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
			server: extra("flannel-backend", `"wireguard-native"`, "secrets-encryption", `true`, "supervisor-port", `9345`, "etcd-arg", `["quota-backend-bytes=8589934592"]`, "node-ip", `"10.0.0.5"`),
			agent:  extra("node-ip", `"10.0.0.5,2001:db8::5"`, "node-external-ip", `["1.2.3.4"]`, "selinux", `true`, "lb-server-port", `6444`),
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
				`spec.serverConfig.extraConfig[--secrets-encryption]: Invalid value: "--secrets-encryption": not a k3s server option`,
				`spec.serverConfig.extraConfig[flannel_backend]: Invalid value: "flannel_backend": not a k3s server option`,
				`spec.agentConfig.extraConfig[node-ipp]: Invalid value: "node-ipp": not a k3s agent option`,
			},
		},
		{
			name:  "a server-only option in the agent map",
			agent: extra("flannel-backend", `"vxlan"`),
			want: []string{
				`spec.agentConfig.extraConfig[flannel-backend]: Invalid value: "flannel-backend": not a k3s agent option; server-only options go in serverConfig.extraConfig`,
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
