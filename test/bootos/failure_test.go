package bootos

import (
	"strings"
	"testing"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
)

// TestCloudInitFailureIsReported: data cloud-init cannot fully apply must not
// end in the bootstrap-success sentinel, or Cluster API calls the machine
// bootstrapped with files or accounts missing. cloud-init goes on after a failed
// module, so the runcmd check stops before the install, says why in the marker
// file and on the console log, and cloud-init reports the boot failed.
func TestCloudInitFailureIsReported(t *testing.T) {
	requireRoots(t)
	agent := func() cloudinit.Input {
		return cloudinit.Input{Role: cloudinit.Agent, Version: version, Token: agentTok, ServerURL: serverURL,
			Spec: bootstrapv1.KThreesConfigSpec{PreK3sCommands: []string{"echo pre >> /var/log/capk3s/calls"}}}
	}
	unwritable := agent()
	unwritable.Files = []cloudinit.File{
		// No such account on the image and none in spec.users: write_files fails.
		{Path: "/etc/capk3s-test/orphan", Owner: "capk3s-nobody:capk3s-nogroup", Content: "x\n"},
		{Path: "/etc/capk3s-test/after", Content: "y\n"},
	}
	badUser := agent()
	// useradd refuses a home directory that is not absolute.
	badUser.Spec.Users = []bootstrapv1.User{{Name: "ops", HomeDir: "relative/home"}}
	for _, c := range []struct {
		name   string
		in     cloudinit.Input
		reason string
	}{
		{"file-not-written", unwritable, "file /etc/capk3s-test/orphan "},
		{"user-not-created", badUser, "user ops was not created"},
	} {
		userData, err := cloudinit.Render(c.in)
		if err != nil {
			t.Fatalf("%s: render: %v", c.name, err)
		}
		for _, s := range suites {
			t.Run(c.name+"/"+s.name, func(t *testing.T) {
				t.Parallel()
				m := boot(t, s.name, userData)
				defer func() {
					if t.Failed() {
						t.Log(m.diagnostics())
					}
				}()
				if got, ok := m.stat(sentinel); ok {
					t.Errorf("the sentinel was written (%q): Cluster API would call the machine bootstrapped", got.content)
				}
				if got := m.read(failed); !strings.HasPrefix(got, c.reason) {
					t.Errorf("failure marker = %q, want it to start with %q", got, c.reason)
				}
				if out := m.read("/var/log/capk3s/cloud-init-output.log"); !strings.Contains(out, "capk3s: bootstrap failed: "+c.reason) {
					t.Errorf("cloud-init's output log does not say why:\n%s", out)
				}
				for _, call := range m.calls() {
					if call == "pre" || strings.HasPrefix(call, "install ") || strings.HasPrefix(call, "curl ") {
						t.Errorf("ran %q after the data was not applied", call)
					}
				}
				if st := m.read("/var/log/capk3s/status"); !strings.Contains(st, "status: error") || !strings.Contains(st, "scripts-user") {
					t.Errorf("cloud-init status does not report the failed runcmd:\n%s", st)
				}
			})
		}
	}
}
