package cloudinit

import "strings"

const (
	// bootstrapScriptPath holds the plan's commands. A script file, rather than
	// ExecStart lines, keeps the commands as the user wrote them: systemd would
	// otherwise expand "$", "%" and quotes in them by its own rules.
	bootstrapScriptPath = "/etc/capk3s/bootstrap.sh"
	scriptPermissions   = "0700"
	bootstrapUnitName   = "capk3s-bootstrap.service"
	// bootstrapDoneMarker outlives reboots (unlike the sentinel in /run), so the
	// unit bootstraps the machine once, as cloud-init's runcmd does.
	bootstrapDoneMarker = "/etc/capk3s/bootstrap.done"
)

// bootstrapUnit runs the script once the network is up. The script exits with
// the sentinel line's status, so a machine whose k3s did not come up shows a
// failed unit and is not marked done: it tries again on the next boot.
const bootstrapUnit = `[Unit]
Description=Install k3s and join the Cluster API cluster (capk3s)
Wants=network-online.target
After=network-online.target
ConditionPathExists=!` + bootstrapDoneMarker + `

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=` + bootstrapScriptPath + `
ExecStartPost=/bin/touch ` + bootstrapDoneMarker + `

[Install]
WantedBy=multi-user.target
`

// bootstrapScript runs the commands in order with sh, one per line, the way
// cloud-init runs runcmd: a failing command does not stop the next one, which is
// why the sentinel checks that k3s is active before writing its file.
func bootstrapScript(commands []string) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for _, c := range commands {
		b.WriteString(c)
		b.WriteString("\n")
	}
	return b.String()
}
