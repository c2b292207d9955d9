package sim

import (
	"strings"
	"testing"
)

func TestParseInstallCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cmd     string
		want    installCommand
		wantOK  bool
		wantErr string // substring of the error; "" means no error
	}{
		{
			name:   "online server, as the renderer writes it",
			cmd:    `curl -sfL 'https://get.k3s.io' | INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - server`,
			want:   installCommand{role: roleServer, version: "v1.35.4+k3s1"},
			wantOK: true,
		},
		{
			name:   "online agent, as the renderer writes it",
			cmd:    `curl -sfL 'https://get.k3s.io' | INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - agent`,
			want:   installCommand{role: roleAgent, version: "v1.35.4+k3s1"},
			wantOK: true,
		},
		{
			name:   "online from another script URL",
			cmd:    `curl -sfL 'https://mirror.example.com/k3s/install.sh' | INSTALL_K3S_VERSION='v1.29.1+k3s2' sh -s - server`,
			want:   installCommand{role: roleServer, version: "v1.29.1+k3s2"},
			wantOK: true,
		},
		{
			name:   "air-gapped agent, script path with a space",
			cmd:    `INSTALL_K3S_SKIP_DOWNLOAD=true INSTALL_K3S_VERSION='v1.30.0-rc1+k3s2' sh '/opt/k3s/install it.sh' agent`,
			want:   installCommand{role: roleAgent, version: "v1.30.0-rc1+k3s2", skipDownload: true, script: "/opt/k3s/install it.sh"},
			wantOK: true,
		},
		{
			name:   "air-gapped server, default script path",
			cmd:    `INSTALL_K3S_SKIP_DOWNLOAD=true INSTALL_K3S_VERSION='v1.35.4+k3s1' sh '/opt/install.sh' server`,
			want:   installCommand{role: roleServer, version: "v1.35.4+k3s1", skipDownload: true, script: "/opt/install.sh"},
			wantOK: true,
		},
		{
			name:   "install into a read-only bin directory skips the download too",
			cmd:    `INSTALL_K3S_BIN_DIR_READ_ONLY=true INSTALL_K3S_VERSION='v1.35.4+k3s1' sh /opt/install.sh server`,
			want:   installCommand{role: roleServer, version: "v1.35.4+k3s1", skipDownload: true, script: "/opt/install.sh"},
			wantOK: true,
		},
		{
			name:   "verified online server, run from the checked file with a binary mirror",
			cmd:    `INSTALL_K3S_ARTIFACT_URL='https://mirror.example.com/k3s' INSTALL_K3S_VERSION='v1.35.4+k3s1' sh '/run/capk3s/install.sh' server`,
			want:   installCommand{role: roleServer, version: "v1.35.4+k3s1", script: "/run/capk3s/install.sh"},
			wantOK: true,
		},
		{
			name:   "double-quoted version",
			cmd:    `curl -sfL https://get.k3s.io | INSTALL_K3S_VERSION="v1.35.4+k3s1" sh -s - agent`,
			want:   installCommand{role: roleAgent, version: "v1.35.4+k3s1"},
			wantOK: true,
		},
		{
			name:   "unquoted version",
			cmd:    `curl -sfL https://get.k3s.io | INSTALL_K3S_VERSION=v1.28.15+k3s1 sh -s - server`,
			want:   installCommand{role: roleServer, version: "v1.28.15+k3s1"},
			wantOK: true,
		},
		{
			name:   "version quoted in pieces",
			cmd:    `curl -sfL https://get.k3s.io | INSTALL_K3S_VERSION=v1.35'.4'"+k3s1" sh -s - server`,
			want:   installCommand{role: roleServer, version: "v1.35.4+k3s1"},
			wantOK: true,
		},
		{
			name:   "role quoted",
			cmd:    `curl -sfL https://get.k3s.io | INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - 'agent'`,
			want:   installCommand{role: roleAgent, version: "v1.35.4+k3s1"},
			wantOK: true,
		},
		{
			name:   "install after other commands on the same line",
			cmd:    `mkdir -p /tmp/x && curl -sfL https://get.k3s.io | INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - server`,
			want:   installCommand{role: roleServer, version: "v1.35.4+k3s1"},
			wantOK: true,
		},
		{name: "echo", cmd: `echo hi`},
		{name: "empty command", cmd: ``},
		{
			name: "server sentinel",
			cmd:  `systemctl is-active --quiet k3s && mkdir -p /run/cluster-api && echo success > /run/cluster-api/bootstrap-success.complete`,
		},
		{
			name: "agent sentinel",
			cmd:  `systemctl is-active --quiet k3s-agent && mkdir -p /run/cluster-api && echo success > /run/cluster-api/bootstrap-success.complete`,
		},
		{
			name: "sh without INSTALL_K3S_VERSION is not an install",
			cmd:  `curl -sfL https://get.k3s.io | sh -s - server`,
		},
		{
			name: "INSTALL_K3S_VERSION on another program than sh",
			cmd:  `INSTALL_K3S_VERSION='v1.35.4+k3s1' bash /opt/install.sh server`,
		},
		{
			name: "INSTALL_K3S_VERSION only mentioned in an argument",
			cmd:  `echo INSTALL_K3S_VERSION=v1.35.4+k3s1 server`,
		},
		{
			name: "not shell for this parser, not an install",
			cmd:  `echo 'unterminated`,
		},
		{
			name:    "install ending in something else than server or agent",
			cmd:     `curl -sfL 'https://get.k3s.io' | INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - server --cluster-init`,
			wantErr: `ends in "--cluster-init", not server or agent`,
		},
		{
			name:    "air-gapped install with no subcommand",
			cmd:     `INSTALL_K3S_SKIP_DOWNLOAD=true INSTALL_K3S_VERSION='v1.35.4+k3s1' sh /opt/install.sh`,
			wantErr: `ends in "/opt/install.sh"`,
		},
		{
			name:    "install with a misspelt role",
			cmd:     `curl -sfL https://get.k3s.io | INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - Server`,
			wantErr: `ends in "Server"`,
		},
		{
			name:    "unparseable shell mentioning INSTALL_K3S_VERSION",
			cmd:     `curl -sfL https://get.k3s.io | INSTALL_K3S_VERSION='v1.35.4+k3s1 sh -s - server`,
			wantErr: "does not parse as shell",
		},
		{
			name:    "unbalanced parenthesis around an install",
			cmd:     `(curl -sfL https://get.k3s.io | INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - server`,
			wantErr: "does not parse as shell",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok, err := parseInstallCommand(tc.cmd)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseInstallCommand(%q) error = %v, want one containing %q", tc.cmd, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseInstallCommand(%q) error = %v, want none", tc.cmd, err)
			}
			if ok != tc.wantOK {
				t.Fatalf("parseInstallCommand(%q) ok = %v, want %v", tc.cmd, ok, tc.wantOK)
			}
			if got != tc.want {
				t.Errorf("parseInstallCommand(%q) = %+v, want %+v", tc.cmd, got, tc.want)
			}
		})
	}
}
