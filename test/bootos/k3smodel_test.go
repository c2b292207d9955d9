package bootos

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// Where the install stand-in leaves config.yaml and its drop-ins as it found them.
const (
	k3sConfigAtInstall  = "/var/log/capk3s/k3s-config-at-install.yaml"
	k3sDropInsAtInstall = "/var/log/capk3s/k3s-config.d-at-install"
)

// k3sVerdict reads config.yaml and its drop-ins, as the install found them, the way
// the k3s the install was asked for would (the simulator's k3s model: its role and
// minor). err is k3s refusing to start; dropped are keys `k3s server` would skip.
func k3sVerdict(m *machine) (dropped []string, err error) {
	role, release := "", ""
	for _, c := range m.calls() {
		if rest, ok := strings.CutPrefix(c, "install "); ok {
			f := strings.Fields(rest)
			role = k3smodel.RoleServer // the install script's default subcommand
			if len(f) > 0 && !strings.Contains(f[0], "=") {
				role = f[0]
			}
			for _, kv := range f {
				if v, ok := strings.CutPrefix(kv, "version="); ok {
					release = v
				}
			}
		}
	}
	if role == "" {
		return nil, fmt.Errorf("k3s was not installed")
	}
	rel, err := k3smodel.ParseRelease(release)
	if err != nil {
		return nil, err
	}
	minor, err := rel.Known()
	if err != nil {
		return nil, err
	}
	main, ok := m.stat(k3sConfigAtInstall)
	if !ok {
		return nil, fmt.Errorf("the install found no config.yaml")
	}
	files := [][]byte{main.content}
	// k3s reads the drop-ins named *.yaml or *.yml, in name order
	// (pkg/configfilearg dotDFiles, v1.34.9 to v1.36.2).
	var names []string
	if dir, ok := m.layer(k3sDropInsAtInstall); ok {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if ext := strings.ToLower(path.Ext(e.Name())); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
				names = append(names, e.Name())
			}
		}
	}
	slices.Sort(names)
	for _, n := range names {
		files = append(files, []byte(m.read(path.Join(k3sDropInsAtInstall, n))))
	}
	cfg, err := k3smodel.ReadConfig(minor, role, files...)
	if err != nil {
		return nil, err
	}
	if role == k3smodel.RoleServer {
		if err := k3smodel.CheckServerFlags(cfg); err != nil {
			return nil, err
		}
	}
	if err := k3smodel.CheckNodeLabels(role, cfg.Values["node-label"]); err != nil {
		return nil, err
	}
	return cfg.Dropped, nil
}

// checkK3sWouldStart fails a boot whose k3s would exit on its config, or skip a key
// of it (a setting the user made that would have no effect).
func checkK3sWouldStart(t *testing.T, m *machine) {
	t.Helper()
	dropped, err := k3sVerdict(m)
	if err != nil {
		t.Errorf("k3s, as the simulator's model reads its config: %v", err)
	}
	if len(dropped) > 0 {
		t.Errorf("k3s server would skip config keys %v", dropped)
	}
}

// TestK3sVerdictReadsWhatTheInstallFound: the boots' k3s check judges the config
// recorded on the machine with the role and release the install was called with.
// Needs no root: the machines are written by hand.
func TestK3sVerdictReadsWhatTheInstallFound(t *testing.T) {
	for _, c := range []struct {
		name, install, config string
		dropIns               map[string]string
		wantErr, wantDropped  string
	}{
		{name: "server starts", install: "install server version=v1.36.3+k3s1 skip-download=", config: "cluster-init: true\ntoken: t\n"},
		{name: "default subcommand is server", install: "install  version=v1.34.1+k3s1 skip-download=", config: "cluster-init: true\n"},
		{name: "agent refuses a server key", install: "install agent version=v1.35.2+k3s1 skip-download=", config: "server: https://x:6443\ncluster-init: true\n",
			wantErr: "flag provided but not defined: -cluster-init"},
		{name: "server drops an unknown key", install: "install server version=v1.36.3+k3s1", config: "no-such-key: 1\n", wantDropped: "no-such-key"},
		{name: "a drop-in is read after config.yaml", install: "install server version=v1.36.3+k3s1", config: "token: t\n",
			dropIns: map[string]string{"10-x.yaml": "disable-etcd: true\n", "20-ignored.conf": "x: y\n"}, wantErr: "--server is required with --disable-etcd"},
		{name: "a value its flag cannot take", install: "install server version=v1.36.3+k3s1", config: "cluster-init: maybe\n", wantErr: "invalid value"},
		{name: "a minor the model does not play", install: "install server version=v1.33.9+k3s1", config: "token: t\n", wantErr: "not a minor the simulator plays"},
		{name: "no install", config: "token: t\n", wantErr: "k3s was not installed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			upper := t.TempDir()
			write := func(p, s string) {
				p = upper + p
				if err := os.MkdirAll(path.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			write("/var/log/capk3s/calls", "pre\n"+c.install+"\n")
			write(k3sConfigAtInstall, c.config)
			for n, s := range c.dropIns {
				write(path.Join(k3sDropInsAtInstall, n), s)
			}
			m := &machine{t: t, lower: t.TempDir(), upper: upper}
			dropped, err := k3sVerdict(m)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("k3s would exit: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("err = %v, want %q", err, c.wantErr)
			}
			if got := strings.Join(dropped, ","); got != c.wantDropped {
				t.Errorf("dropped = %q, want %q", got, c.wantDropped)
			}
		})
	}
}
