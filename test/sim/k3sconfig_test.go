package sim

import (
	"strings"
	"testing"

	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// knownOption says whether the k3s release version's role takes key, per k3smodel.
func knownOption(t testing.TB, version, role, key string) bool {
	t.Helper()
	r, err := k3smodel.ParseRelease(version)
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Known()
	if err != nil {
		t.Fatal(err)
	}
	return k3smodel.HasFlag(m.Number, role, strings.TrimSuffix(key, "+"))
}

// rendered is role's rendered bootstrap data, parsed, with edit applied to config.yaml.
func renderedWith(t *testing.T, role cloudinit.Role, edit func(map[string]any)) *bootData {
	t.Helper()
	b, _ := parseRendered(t, mustRender(t, fullInput(role, mustCAs(t, theCAs))))
	if edit != nil {
		edit(b.k3sConfig)
	}
	return b
}

// TestAgentWithUnknownKeyNeverJoins: k3s agent exits on a config key it does not know
// (k3s has no ValidFlags for agent in pkg/configfilearg), e.g. the option capk3s used
// to accept under the wrong name.
func TestAgentWithUnknownKeyNeverJoins(t *testing.T) {
	t.Parallel()
	b := renderedWith(t, cloudinit.Agent, func(c map[string]any) { c["flannel-cni-conf-dir"] = "/etc/cni" })
	err := b.checkStatic()
	if err == nil || !strings.Contains(err.Error(), "k3s agent exited: flag provided but not defined: -flannel-cni-conf-dir") {
		t.Fatalf("checkStatic = %v, want k3s agent to exit", err)
	}
	if got := bootFailureReason(err); got != k3sExitedReason {
		t.Errorf("reason = %s, want %s", got, k3sExitedReason)
	}
	// The flag's real name is taken.
	b = renderedWith(t, cloudinit.Agent, func(c map[string]any) { c["flannel-cni-conf"] = "/etc/cni.conf" })
	if err := b.checkStatic(); err != nil {
		t.Errorf("flannel-cni-conf refused: %v", err)
	}
}

// TestServerDropsUnknownKeys: k3s server warns about a key it does not know and skips
// it; the machine joins, and says so in its Ready message.
func TestServerDropsUnknownKeys(t *testing.T) {
	t.Parallel()
	b := renderedWith(t, cloudinit.ServerJoin, func(c map[string]any) {
		c["kube-apiserver-extra-mount"] = "/a:/b"
		c["disable-apiserver-lb"] = true // agent-only
	})
	if err := b.checkStatic(); err != nil {
		t.Fatalf("checkStatic = %v, want the keys dropped", err)
	}
	if got := b.droppedNote(); got != "k3s server skipped unknown config keys (no effect): disable-apiserver-lb, kube-apiserver-extra-mount" {
		t.Errorf("note = %q", got)
	}
}

// TestBadlyTypedValueIsFatal: both subcommands convert values to the flag's type.
func TestBadlyTypedValueIsFatal(t *testing.T) {
	t.Parallel()
	for _, role := range []cloudinit.Role{cloudinit.Agent, cloudinit.ServerJoin} {
		b := renderedWith(t, role, func(c map[string]any) { c["lb-server-port"] = "abc" })
		if err := b.checkStatic(); !k3smodel.IsExit(err) || !strings.Contains(err.Error(), "-lb-server-port") {
			t.Errorf("%s: checkStatic = %v, want k3s to exit on lb-server-port", role, err)
		}
	}
}

// TestReservedNodeLabelStopsTheKubelet: node-role.kubernetes.io labels go to the
// kubelet's --node-labels, which refuses them.
func TestReservedNodeLabelStopsTheKubelet(t *testing.T) {
	t.Parallel()
	b := renderedWith(t, cloudinit.Agent, func(c map[string]any) {
		c["node-label"] = []any{"a=b", "node-role.kubernetes.io/worker=true"}
	})
	err := b.checkStatic()
	if !k3smodel.IsExit(err) || !strings.Contains(err.Error(), "node-role.kubernetes.io/worker") {
		t.Errorf("checkStatic = %v, want the kubelet to refuse the label", err)
	}
}

// TestDisableEtcdOnTheFirstServer: k3s refuses --disable-etcd without --server.
func TestDisableEtcdOnTheFirstServer(t *testing.T) {
	t.Parallel()
	b := renderedWith(t, cloudinit.ServerInit, func(c map[string]any) { c["disable-etcd"] = true })
	if err := b.checkStatic(); !k3smodel.IsExit(err) || !strings.Contains(err.Error(), "--server is required with --disable-etcd") {
		t.Errorf("checkStatic = %v", err)
	}
}

// TestUnplayedReleaseIsRefused: the simulator cannot say what another minor's k3s does.
func TestUnplayedReleaseIsRefused(t *testing.T) {
	t.Parallel()
	b := renderedWith(t, cloudinit.Agent, nil)
	b.install.version = "v1.31.4+k3s1"
	if err := b.checkStatic(); err == nil || !strings.Contains(err.Error(), "not a minor the simulator plays") {
		t.Errorf("checkStatic = %v", err)
	}
}

// TestDropInsAreRead: config.yaml.d files are read after config.yaml, "+" appends.
func TestDropInsAreRead(t *testing.T) {
	t.Parallel()
	b := renderedWith(t, cloudinit.Agent, nil)
	b.files[k3sConfigDropIns+"10-extra.yaml"] = []byte("node-label+: [node-role.kubernetes.io/x=y]\n")
	if err := b.checkStatic(); !k3smodel.IsExit(err) {
		t.Errorf("checkStatic = %v, want the drop-in's label refused", err)
	}
}
