package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// The roles as k3s's install script names them.
const (
	roleServer = k3smodel.RoleServer
	roleAgent  = k3smodel.RoleAgent
)

// k3sExitedReason is a machine whose k3s refused to start: it never joins.
const k3sExitedReason = "K3sExited"

// k3sConfigDropIns is where k3s reads config.yaml's drop-ins (pkg/configfilearg dotDFiles).
const k3sConfigDropIns = k3sConfigPath + ".d/"

// readAsK3s reads config.yaml and its drop-ins as the k3s release the machine installs
// would (k3smodel): the minor must be one the model plays; an agent's unknown key, a
// value its flag cannot take, a flag combination `k3s server` refuses, or a node label
// the kubelet refuses ends k3s. A server's unknown keys are dropped and kept in
// b.dropped, for the machine's Ready message.
func (b *bootData) readAsK3s() error {
	rel, err := k3smodel.ParseRelease(b.install.version)
	if err != nil {
		return fmt.Errorf("INSTALL_K3S_VERSION: %w", err)
	}
	minor, err := rel.Known()
	if err != nil {
		return err
	}
	// config.yaml as the simulator parsed it (b.k3sConfig, which tests edit), written
	// back: one reading of the file for every check.
	main, err := yaml.Marshal(b.k3sConfig)
	if err != nil {
		return err
	}
	files := [][]byte{main}
	var dropIns []string
	for p := range b.files {
		name, ok := strings.CutPrefix(p, k3sConfigDropIns)
		lower := strings.ToLower(name)
		if ok && !strings.Contains(name, "/") && (strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml")) {
			dropIns = append(dropIns, p)
		}
	}
	slices.Sort(dropIns)
	for _, p := range dropIns {
		files = append(files, b.files[p])
	}
	role := b.install.role
	cfg, err := k3smodel.ReadConfig(minor, role, files...)
	if err != nil {
		return err
	}
	if role == roleServer {
		if err := k3smodel.CheckServerFlags(cfg); err != nil {
			return err
		}
	}
	if err := k3smodel.CheckNodeLabels(role, cfg.Values["node-label"]); err != nil {
		return err
	}
	b.dropped = cfg.Dropped
	b.supervisorPort = k3smodel.SupervisorPort(cfg)
	if role == roleServer {
		b.flannelBackend = cfg.Last("flannel-backend")
		if b.flannelBackend == "" {
			b.flannelBackend = k3smodel.BackendVXLAN
		}
		b.disableAgent = cfg.Bool("disable-agent")
	}
	return nil
}

// droppedNote is what the machine's Ready condition says about keys k3s skipped.
func (b *bootData) droppedNote() string {
	if len(b.dropped) == 0 {
		return ""
	}
	return fmt.Sprintf("k3s %s skipped unknown config keys (no effect): %s", b.install.role, strings.Join(b.dropped, ", "))
}

// bootFailureReason is the Ready reason for data the machine cannot boot from.
func bootFailureReason(err error) string {
	var exit *k3smodel.ExitError
	if errors.As(err, &exit) {
		return k3sExitedReason
	}
	return bootstrapDataInvalidReason
}
