package k3smodel

import (
	"fmt"
	"slices"
	"strings"
)

// What a system-upgrade-controller Plan's Job does to k3s on a node. SUC runs the
// Plan's upgrade container privileged, with the host's root filesystem at /host and
// the host's PID namespace (SUC's pkg/upgrade/job/job.go), so:
//
//   - with no command, the container is k3s-upgrade's upgrade.sh ("upgrade"; read
//     from k3s-io/k3s-upgrade scripts/upgrade.sh): it compares the image's k3s binary
//     with the running one (sha256) and, when they are the same, says "Binary already
//     been replaced" and exits 0 without touching k3s; otherwise it copies the new
//     binary over the old and sends k3s SIGTERM, and systemd starts k3s again on the
//     new binary. The simulator takes "same binary" to be "same k3s release";
//   - with the command chroot /host systemctl restart <unit>, systemd on the host
//     restarts that unit: k3s stops and starts on the same binary. The unit is the
//     one k3s's install.sh made (v1.36.2 install.sh: "k3s" for a server, "k3s-agent"
//     for an agent, unless INSTALL_K3S_NAME, which capk3s does not set); another
//     unit fails the Job as systemctl does. The unit install.sh writes has
//     KillMode=process and Type=notify: stopping k3s leaves the containers, the
//     Job's own included, running, and systemctl returns once k3s is up again. That
//     the k3s-upgrade image (alpine) has a chroot (busybox's) was not checked in the
//     image itself;
//   - any other command is something the simulator cannot judge, and fails the Job
//     with a message that says so.

// JobEffect is what a Plan's Job does to k3s on a node.
type JobEffect int

const (
	// JobNoRestart leaves k3s running as it was.
	JobNoRestart JobEffect = iota
	// JobUpgrades restarts k3s on a new release.
	JobUpgrades
	// JobRestarts restarts k3s on the same release.
	JobRestarts
)

// K3sUnit is the systemd unit install.sh makes for k3s on a server or an agent.
func K3sUnit(server bool) string {
	if server {
		return "k3s"
	}
	return "k3s-agent"
}

// PlanJob is the effect of a Plan's upgrade container (command and args as the Plan
// gives them) on a node running release `running`, for the Plan's version, or an
// error with the reason the Job fails.
func PlanJob(command, args []string, version, running string, server bool) (JobEffect, error) {
	argv := append(slices.Clone(command), args...)
	if len(argv) == 0 {
		if sameRelease(version, running) {
			return JobNoRestart, nil
		}
		return JobUpgrades, nil
	}
	if len(argv) == 5 && argv[0] == "chroot" && argv[1] == "/host" && argv[2] == "systemctl" && argv[3] == "restart" {
		unit := strings.TrimSuffix(argv[4], ".service")
		if unit != K3sUnit(server) {
			// systemctl's own words, capital and full stop included.
			return JobNoRestart, fmt.Errorf("Failed to restart %s.service: Unit %s.service not found.", unit, unit) //nolint:revive,staticcheck // systemctl's words.
		}
		return JobRestarts, nil
	}
	return JobNoRestart, fmt.Errorf("the simulator does not know what the upgrade container %q does", strings.Join(argv, " "))
}

// sameRelease compares k3s releases as SUC and a Node name them ("+" or "-" before
// k3sN).
func sameRelease(a, b string) bool {
	norm := func(s string) string { return strings.ReplaceAll(strings.TrimPrefix(s, "v"), "+", "-") }
	return norm(a) == norm(b)
}
