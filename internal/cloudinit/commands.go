package cloudinit

import (
	"fmt"
	"path"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	// DefaultInstallScriptURL is k3s's official install script.
	DefaultInstallScriptURL = "https://get.k3s.io"
	// defaultAirGappedInstallScript is where cluster-api-k3s images put the script.
	defaultAirGappedInstallScript = "/opt/install.sh"
	sentinelDir                   = "/run/cluster-api"
	sentinelFile                  = sentinelDir + "/bootstrap-success.complete"
)

// runCommands returns runcmd: the user's pre commands, the k3s install, the user's
// post commands and, last, the sentinel that tells Cluster API the machine
// bootstrapped.
func runCommands(in Input, version string) ([]string, error) {
	if err := checkCommands("preK3sCommands", in.Spec.PreK3sCommands); err != nil {
		return nil, err
	}
	if err := checkCommands("postK3sCommands", in.Spec.PostK3sCommands); err != nil {
		return nil, err
	}
	install, verify, err := installCommands(in, version)
	if err != nil {
		return nil, err
	}
	snapshotDir, err := snapshotDirCommand(in)
	if err != nil {
		return nil, err
	}
	cmds := make([]string, 0, len(in.Spec.PreK3sCommands)+len(in.Spec.PostK3sCommands)+5)
	cmds = append(cmds, in.Spec.PreK3sCommands...)
	// After preK3sCommands, which may mount the folder's file system.
	cmds = append(cmds, snapshotDir...)
	// Right before the install, so that preK3sCommands may put the air-gapped
	// files in place.
	if verify != "" {
		cmds = append(cmds, verify)
	}
	cmds = append(cmds, install)
	cmds = append(cmds, restoreCommands(in)...)
	cmds = append(cmds, in.Spec.PostK3sCommands...)
	return append(cmds, sentinelCommand(in.Role)), nil
}

func checkCommands(field string, cmds []string) error {
	for i, c := range cmds {
		if !carriable(c) {
			return fmt.Errorf("spec.%s[%d] %s", field, i, notCarriable)
		}
		if misreadByYAML11(c) {
			return fmt.Errorf("spec.%s[%d] %q would reach cloud-init as a YAML number, boolean or null, not a command", field, i, c)
		}
	}
	return nil
}

func k3sSubcommand(r Role) string {
	if r == Agent {
		return "agent"
	}
	return "server"
}

// installCommands returns the command that runs k3s's install script and, when
// the spec gives checksums, the entry that verifies them first (install_verify.go).
func installCommands(in Input, version string) (install, verify string, err error) {
	ac := &in.Spec.AgentConfig
	if errs := InstallErrors(ac, field.NewPath("spec", "agentConfig")); len(errs) > 0 {
		return "", "", errs.ToAggregate()
	}
	sub := k3sSubcommand(in.Role)
	// A restore runs between the install and the service's first start.
	skipStart := ""
	if restoring(in) {
		skipStart = "INSTALL_K3S_SKIP_START=true "
	}
	if ac.AirGapped {
		script := ac.AirGappedInstallScriptPath
		if script == "" {
			script = defaultAirGappedInstallScript
		}
		if !path.IsAbs(script) {
			return "", "", fmt.Errorf("spec.agentConfig.airGappedInstallScriptPath %q must be absolute", script)
		}
		if verifying(ac) {
			verify = verifyCommand(ac, "", script)
		}
		return fmt.Sprintf("INSTALL_K3S_SKIP_DOWNLOAD=true %sINSTALL_K3S_VERSION=%s sh %s %s",
			skipStart, shellQuote(version), shellQuote(script), sub), verify, nil
	}
	scriptURL := ac.InstallScriptURL
	if scriptURL == "" {
		scriptURL = in.InstallScriptURL
	}
	if scriptURL == "" {
		scriptURL = DefaultInstallScriptURL
	}
	env := skipStart
	if ac.ArtifactURL != "" {
		env = "INSTALL_K3S_ARTIFACT_URL=" + shellQuote(ac.ArtifactURL) + " " + env
	}
	if verifying(ac) {
		// Downloaded, checked, then run from the file: a pipe would run the
		// script before anything could check it.
		return fmt.Sprintf("%sINSTALL_K3S_VERSION=%s sh %s %s",
			env, shellQuote(version), shellQuote(verifiedScriptPath), sub), verifyCommand(ac, scriptURL, verifiedScriptPath), nil
	}
	// The options all live in config.yaml, so nothing but the subcommand follows "-".
	return fmt.Sprintf("curl -sfL %s | %sINSTALL_K3S_VERSION=%s sh -s - %s",
		shellQuote(scriptURL), env, shellQuote(version), sub), "", nil
}

// sentinelCommand writes the success file only when k3s actually runs: runcmd does
// not stop at a failed command, so reaching the last line proves nothing.
func sentinelCommand(r Role) string {
	unit := "k3s"
	if r == Agent {
		unit = "k3s-agent"
	}
	return fmt.Sprintf("systemctl is-active --quiet %s && mkdir -p %s && echo success > %s", unit, sentinelDir, sentinelFile)
}
