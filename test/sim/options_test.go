package sim

import (
	"testing"

	"github.com/capk3s/capk3s/internal/cloudinit"
)

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
