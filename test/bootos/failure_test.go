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
		bootEverySuite(t, c.name, c.in, func(t *testing.T, m *machine) {
			checkFailureReported(t, m, c.reason, func(call string) bool {
				return call == "pre" || strings.HasPrefix(call, "install ") || strings.HasPrefix(call, "curl ")
			})
		})
	}
}
