package sim

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/capk3s/capk3s/internal/cloudinit"
)

// TestRendererOptionsAreKnown checks every option the renderer can write, with all
// of the spec's fields set, against the simulator's flags for its role and minor.
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
			if !knownOption(t, b.install.version, wantRole, key) {
				t.Errorf("%s: the renderer writes %q, which the simulator says k3s %s does not take", role, key, wantRole)
			}
		}
	}
}

// TestExtraConfigPassesTheSimulator renders extraConfig options admission lets
// through and has the simulator, with its own picture of k3s (k3smodel), check them.
func TestExtraConfigPassesTheSimulator(t *testing.T) {
	t.Parallel()
	ca := mustCAs(t, theCAs)
	for _, role := range []cloudinit.Role{cloudinit.ServerInit, cloudinit.ServerJoin, cloudinit.Agent} {
		in := fullInput(role, ca)
		in.Spec.AgentConfig.ExtraConfig = map[string]apiextensionsv1.JSON{
			"node-ip": {Raw: []byte(`"10.0.0.5"`)}, "node-external-ip+": {Raw: []byte(`["203.0.113.5"]`)},
		}
		want := []string{"node-ip", "node-external-ip+"}
		if role != cloudinit.Agent {
			in.Spec.ServerConfig.ExtraConfig = map[string]apiextensionsv1.JSON{
				"flannel-backend": {Raw: []byte(`"wireguard-native"`)}, "secrets-encryption": {Raw: []byte(`true`)},
			}
			want = append(want, "flannel-backend", "secrets-encryption")
		}
		b, _ := parseRendered(t, mustRender(t, in))
		for _, key := range want {
			if _, ok := b.k3sConfig[key]; !ok {
				t.Errorf("%s: %q not rendered: %v", role, key, b.k3sConfig)
			}
		}
		if err := b.checkStatic(); err != nil {
			t.Errorf("%s: the simulator refuses what admission accepts: %v", role, err)
		}
	}
}
