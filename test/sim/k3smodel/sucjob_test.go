package k3smodel

import (
	"strings"
	"testing"
)

func TestPlanJob(t *testing.T) {
	t.Parallel()
	restart := func(unit string) []string { return []string{"chroot", "/host", "systemctl", "restart", unit} }
	tests := []struct {
		name          string
		command, args []string
		version       string
		server        bool
		want          JobEffect
		wantErr       string
	}{
		{name: "upgrade.sh, same binary", version: "v1.36.3-k3s1", want: JobNoRestart},
		{name: "upgrade.sh, new binary", version: "v1.36.4+k3s1", want: JobUpgrades},
		{name: "restart a server", command: restart("k3s"), version: "v1.36.3+k3s1", server: true, want: JobRestarts},
		{name: "restart an agent, unit with suffix", command: restart("k3s-agent.service"), version: "v1.36.3+k3s1", want: JobRestarts},
		{name: "restart split into command and args", command: []string{"chroot", "/host"}, args: []string{"systemctl", "restart", "k3s-agent"}, want: JobRestarts},
		{name: "an agent's unit on a server", command: restart("k3s-agent"), server: true, wantErr: "Unit k3s-agent.service not found."},
		{name: "a server's unit on an agent", command: restart("k3s"), wantErr: "Unit k3s.service not found."},
		{name: "anything else", command: []string{"sh", "-c", "reboot"}, wantErr: `does not know what the upgrade container "sh -c reboot" does`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := PlanJob(tt.command, tt.args, tt.version, "v1.36.3+k3s1", tt.server)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("PlanJob = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
