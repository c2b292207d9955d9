// Package minisystemd is a small service supervisor that stands in for
// systemd inside the machines of the real-k3s test layer (test/realk3s).
//
// Why it exists: each test machine is a chroot into a Debian root inside its
// own namespaces, started as a plain process tree. There is no systemd in it,
// and running systemd there (it wants to own a real cgroup tree and PID 1 of a
// full boot) is neither possible nor wanted. Yet the chain capk3s relies on
// must stay real: capk3s's bootstrap data runs under cloud-init, runs k3s's
// own install.sh, which writes /etc/systemd/system/k3s.service and then
// drives it with systemctl (enable, daemon-reload, restart); capk3s's
// sentinel asks `systemctl is-active k3s`, a restore runs `systemctl start`,
// an in-place restart runs `systemctl restart`. This package supplies the
// two halves of that contract and nothing else:
//
//   - `minisystemd init -- <boot command>` runs as PID 1 of the machine (or as
//     a child subreaper in tests): it reaps orphans, runs the boot command
//     once, serves systemctl requests on a unix socket and supervises the
//     units: Type=notify readiness through NOTIFY_SOCKET, Restart=,
//     RestartSec=, KillMode=, EnvironmentFile=, ExecStartPre=, LimitNOFILE=.
//   - `systemctl <verb> <unit>` (the same binary under that name) is the
//     client. It exits with the status systemd's systemctl would, so that
//     install.sh and capk3s's scripts take the same branches they take on a
//     real machine. Verbs it does not know fail loudly.
//
// Only the subset of unit-file syntax that k3s's install.sh writes is
// understood; unknown keys are accepted and ignored, as systemd does with a
// warning.
//
// For the machines: [Build] compiles the static binary at test time,
// [Install] puts it into a machine root (BinaryPath, and systemctl linked to
// it in place of systemd's), and [InitCommand] is what the machine runs,
// chrooted, as PID 1. Inside the machine the control socket is
// /run/minisystemd.sock, unit files are read from /etc/systemd/system, and
// logs go to /var/log/minisystemd: minisystemd.log (the supervisor's own
// actions), <unit>.log per unit without ".service" ([UnitLogPath]; k3s.log),
// boot.log and boot.exit (the boot command's output and exit status).
// MINISYSTEMD_SOCKET, MINISYSTEMD_UNIT_DIR and MINISYSTEMD_LOG_DIR move them
// (tests). Units enabled in the root start when init starts, so a machine
// restarted on the same root brings k3s back as systemd would.
package minisystemd
