package cloudinit

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

func extraJSON(kv ...string) map[string]apiextensionsv1.JSON {
	m := map[string]apiextensionsv1.JSON{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = apiextensionsv1.JSON{Raw: []byte(kv[i+1])}
	}
	return m
}

// configYAML renders in and returns config.yaml as written on disk.
func configYAML(t *testing.T, in Input) string {
	t.Helper()
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	return string(bytesOnDisk(t, parse(t, out).file(t, k3sConfigPath)))
}

func withExtra(in Input) Input {
	in.Spec.AgentConfig.NodeName = "typed-name"
	in.Spec.AgentConfig.ExtraConfig = extraJSON(
		"node-ip", `"10.0.0.5"`,
		"node-external-ip", `["1.2.3.4","2001:db8::4"]`,
		"selinux", `true`,
		"lb-server-port", `6444`,
		// Typed fields and capk3s's own options win.
		"node-name", `"from-extra"`,
		"token", `"stolen"`,
	)
	in.Spec.ServerConfig.ExtraConfig = extraJSON(
		"flannel-backend", `"wireguard-native"`,
		"secrets-encryption", `true`,
		"etcd-arg+", `["quota-backend-bytes=8589934592"]`,
		// Over the agent map's value, on servers.
		"node-ip", `"10.0.0.6"`,
		"cluster-init", `false`,
		"tls-san", `["extra.example.com"]`,
	)
	return in
}

func TestExtraConfigOnServer(t *testing.T) {
	got := configYAML(t, withExtra(minimal(ServerInit)))
	wantYAML := strings.Join([]string{
		"cluster-init: true",
		"disable-cloud-controller: true",
		"etcd-arg+:",
		"- quota-backend-bytes=8589934592",
		"flannel-backend: wireguard-native",
		"kubelet-arg:",
		"- cloud-provider=external",
		"lb-server-port: 6444",
		"node-external-ip:",
		"- 1.2.3.4",
		"- 2001:db8::4",
		"node-ip: 10.0.0.6",
		"node-name: typed-name",
		"secrets-encryption: true",
		"selinux: true",
		"token: " + testToken,
		"",
	}, "\n")
	if got != wantYAML {
		t.Errorf("server config.yaml:\n%s\nwant:\n%s", got, wantYAML)
	}
}

func TestExtraConfigOnAgent(t *testing.T) {
	got := configYAML(t, withExtra(minimal(Agent)))
	wantYAML := strings.Join([]string{
		"kubelet-arg:",
		"- cloud-provider=external",
		"lb-server-port: 6444",
		"node-external-ip:",
		"- 1.2.3.4",
		"- 2001:db8::4",
		"node-ip: 10.0.0.5",
		"node-name: typed-name",
		"node-taint:",
		"- " + uninitializedTaint,
		"selinux: true",
		"server: " + testServerURL,
		"token: " + testToken,
		"",
	}, "\n")
	if got != wantYAML {
		t.Errorf("agent config.yaml:\n%s\nwant:\n%s", got, wantYAML)
	}
}

// TestEmptyExtraConfigRendersNothing keeps empty maps from changing any machine's
// bootstrap data (and so the goldens).
func TestEmptyExtraConfigRendersNothing(t *testing.T) {
	for _, role := range []Role{ServerInit, ServerJoin, Agent} {
		in := minimal(role)
		plain := configYAML(t, in)
		in.Spec.AgentConfig.ExtraConfig = extraJSON()
		in.Spec.ServerConfig.ExtraConfig = extraJSON()
		if got := configYAML(t, in); got != plain {
			t.Errorf("%s: empty extraConfig changed config.yaml:\n%s\nwant:\n%s", role, got, plain)
		}
	}
}

func TestExtraConfigErrors(t *testing.T) {
	cases := []struct {
		name    string
		role    Role
		mutate  func(*Input)
		wantErr string
	}{
		{"server option in the agent map", Agent, func(in *Input) {
			in.Spec.AgentConfig.ExtraConfig = extraJSON("flannel-backend", `"vxlan"`)
		}, "spec.agentConfig.extraConfig[flannel-backend] is not a k3s agent option"},
		{"unknown server option", ServerJoin, func(in *Input) {
			in.Spec.ServerConfig.ExtraConfig = extraJSON("flannel_backend", `"vxlan"`)
		}, "spec.serverConfig.extraConfig[flannel_backend] is not a k3s server option"},
		{"object value", ServerInit, func(in *Input) {
			in.Spec.ServerConfig.ExtraConfig = extraJSON("etcd-s3-timeout", `{"a":"b"}`)
		}, "spec.serverConfig.extraConfig[etcd-s3-timeout]: must be a string, a bool, a number or a list of strings, not an object"},
		// A config stored before the webhook refused it: rendered, the server's
		// supervisor would listen where no join, registration check or snapshot
		// request of capk3s reaches it.
		{"supervisor-port", ServerJoin, func(in *Input) {
			in.Spec.ServerConfig.ExtraConfig = extraJSON("supervisor-port", `9345`)
		}, "spec.serverConfig.extraConfig[supervisor-port]: capk3s does not support k3s's supervisor-port: it reaches k3s's supervisor"},
	}
	for _, tc := range cases {
		in := minimal(tc.role)
		tc.mutate(&in)
		_, err := Render(in)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: error = %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

// TestRendererWritesOnlyManagedOptions ties the renderer to internal/k3s's list:
// every key the typed fields can write is one that extraConfig may not set, so a
// new typed field cannot be overridden from extraConfig by mistake.
func TestRendererWritesOnlyManagedOptions(t *testing.T) {
	for _, role := range []Role{ServerInit, ServerJoin, Agent} {
		cfg := configYAML(t, everyTypedOption(role))
		keys := 0
		for _, line := range strings.Split(cfg, "\n") {
			if line == "" || strings.HasPrefix(line, "- ") || strings.HasPrefix(line, " ") {
				continue
			}
			key, _, _ := strings.Cut(line, ":")
			keys++
			if _, ok := k3s.ManagedOptions[key]; !ok {
				t.Errorf("%s: the renderer writes %q from typed fields, which internal/k3s.ManagedOptions does not list", role, key)
			}
		}
		if keys < 8 {
			t.Errorf("%s: only %d keys rendered: the input did not set the typed fields\n%s", role, keys, cfg)
		}
	}
}

// everyTypedOption sets every input that becomes a k3s option, the datastore too.
func everyTypedOption(role Role) Input {
	in := minimal(role)
	in.Spec.AgentConfig = bootstrapv1.KThreesAgentConfig{
		NodeLabels: []string{"a=b"}, NodeTaints: []string{"a=b:NoSchedule"}, PrivateRegistry: "/etc/registries.yaml",
		KubeletArgs: []string{"v=2"}, KubeProxyArgs: []string{"v=2"}, NodeName: "n",
	}
	in.Spec.ServerConfig = bootstrapv1.KThreesServerConfig{
		KubeAPIServerArgs: []string{"v=2"}, KubeControllerManagerArgs: []string{"v=2"}, KubeSchedulerArgs: []string{"v=2"},
		TLSSan: []string{"x.example.com"}, BindAddress: "0.0.0.0", AdvertiseAddress: "10.0.0.1",
		ClusterCidr: "10.42.0.0/16", ServiceCidr: "10.43.0.0/16", ClusterDNS: "10.43.0.10", ClusterDomain: "cluster.local",
		DisableComponents: []string{"traefik"}, SystemDefaultRegistry: "registry.example.com",
		HTTPSListenPort: "6443", AdvertisePort: "6443",
	}
	if role != Agent {
		in.AgentToken = testAgentToken
		in.TLSSANs = []string{"cp.example.com"}
		in.Spec.ServerConfig.Datastore = &bootstrapv1.Datastore{
			EndpointSecret: bootstrapv1.SecretKeyReference{Name: "pg", Key: "endpoint"},
			CASecret:       &bootstrapv1.SecretKeyReference{Name: "pg-tls", Key: "ca.crt"},
			CertSecret:     &bootstrapv1.SecretKeyReference{Name: "pg-tls", Key: "tls.crt"},
			KeySecret:      &bootstrapv1.SecretKeyReference{Name: "pg-tls", Key: "tls.key"},
		}
		in.Datastore = testDatastore()
	}
	return in
}
