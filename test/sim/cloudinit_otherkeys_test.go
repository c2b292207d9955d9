package sim

import (
	"strings"
	"testing"
)

// Keys cloud-init applies to the OS alone (a user's fragment) are read and set
// apart; the files and commands are read as without them, and a key cloud-init
// does not know still fails the read.
func TestParseCloudConfigOtherKeys(t *testing.T) {
	t.Parallel()
	data := minimal("- path: /opt/app.ini\n  content: \"level = 3\\n\"\n", "- echo post\n")
	b, err := parseCloudConfig([]byte(data + "timezone: Europe/Berlin\nfinal_message: done\n"))
	if err != nil {
		t.Fatalf("parseCloudConfig: %v", err)
	}
	if got := b.otherKeys["timezone"]; got != "Europe/Berlin" {
		t.Errorf("timezone = %#v, want Europe/Berlin", got)
	}
	if got := string(b.files["/opt/app.ini"]); got != "level = 3\n" {
		t.Errorf("/opt/app.ini = %q", got)
	}
	if got := b.commands[len(b.commands)-1]; got != "echo post" {
		t.Errorf("last command = %q, want echo post", got)
	}
	if _, err := parseCloudConfig([]byte(data + "timezon: Europe/Berlin\n")); err == nil || !strings.Contains(err.Error(), "timezon") {
		t.Errorf("misspelt key: err = %v, want one naming timezon", err)
	}
}
