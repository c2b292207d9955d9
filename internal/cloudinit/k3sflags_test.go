package cloudinit

import (
	"strings"
	"testing"
)

// TestRenderRefusesWhatK3sRefuses: options k3s's flag parser would refuse, found by
// the k3s minor the machine installs, never reach a config.yaml; the error names them
// all, for the bootstrap controller's condition.
func TestRenderRefusesWhatK3sRefuses(t *testing.T) {
	cases := []struct {
		name    string
		role    Role
		version string
		mutate  func(*Input)
		want    []string
	}{
		{"agent: a flag k3s does not have", Agent, "v1.36.3+k3s1", func(in *Input) {
			in.Spec.AgentConfig.ExtraConfig = extraJSON("flannel-cni-conf-dir", `"/etc/cni"`, "kube-apiserver-extra-mount", `"/a:/b"`)
		}, []string{
			"spec.agentConfig.extraConfig[flannel-cni-conf-dir] is not a k3s agent option in k3s v1.36.3+k3s1",
			"spec.agentConfig.extraConfig[kube-apiserver-extra-mount] is not a k3s agent option",
		}},
		{"agent: server-only egress-selector-mode", Agent, "v1.34.9+k3s1", func(in *Input) {
			in.Spec.AgentConfig.ExtraConfig = extraJSON("egress-selector-mode", `"pod"`)
		}, []string{"spec.agentConfig.extraConfig[egress-selector-mode] is not a k3s agent option in k3s v1.34.9+k3s1"}},
		{"server: agent-only disable-apiserver-lb", ServerJoin, "v1.35.4+k3s1", func(in *Input) {
			in.Spec.ServerConfig.ExtraConfig = extraJSON("disable-apiserver-lb", `true`)
		}, []string{"spec.serverConfig.extraConfig[disable-apiserver-lb] is not a k3s server option"}},
		{"a value the flag cannot take", Agent, "v1.36.3+k3s1", func(in *Input) {
			in.Spec.AgentConfig.ExtraConfig = extraJSON("lb-server-port", `"abc"`, "selinux", `"maybe"`)
		}, []string{
			"spec.agentConfig.extraConfig[lb-server-port]: k3s v1.36's lb-server-port takes a whole number",
			"spec.agentConfig.extraConfig[selinux]: k3s v1.36's selinux takes a bool",
		}},
		{"a duration", ServerInit, "v1.36.3+k3s1", func(in *Input) {
			in.Spec.ServerConfig.ExtraConfig = extraJSON("etcd-s3-timeout", `"5"`)
		}, []string{"etcd-s3-timeout takes a duration"}},
		{"a reserved node label", Agent, "v1.36.3+k3s1", func(in *Input) {
			in.Spec.AgentConfig.NodeLabels = []string{"tier=web", "node-role.kubernetes.io/worker=true"}
		}, []string{"spec.agentConfig.nodeLabels: the kubelet refuses", "node-role.kubernetes.io/worker"}},
	}
	for _, tc := range cases {
		in := minimal(tc.role)
		in.Version = tc.version
		tc.mutate(&in)
		_, err := Render(in)
		for _, want := range tc.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error = %v, want it to say %q", tc.name, err, want)
			}
		}
	}
}

// TestRenderKeepsWhatK3sTakes: real flags the old hand list lacked, and typed values
// k3s reads, render.
func TestRenderKeepsWhatK3sTakes(t *testing.T) {
	in := minimal(ServerJoin)
	in.Version = "v1.34.9+k3s1"
	in.Spec.AgentConfig.ExtraConfig = extraJSON("flannel-cni-conf", `"/etc/cni.conf"`, "lb-server-port", `"7444"`)
	in.Spec.ServerConfig.ExtraConfig = extraJSON(
		"etcd-s3-bucket-lookup-type", `"path"`,
		"etcd-snapshot-reconcile-interval", `"15m"`,
		"write-kubeconfig-group", `"admins"`,
	)
	got := configYAML(t, in)
	for _, want := range []string{"flannel-cni-conf: /etc/cni.conf", "etcd-s3-bucket-lookup-type: path", "etcd-snapshot-reconcile-interval: 15m", `lb-server-port: "7444"`} {
		if !strings.Contains(got, want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, got)
		}
	}
}
