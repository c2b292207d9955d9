package main

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const configMapFileManifest = `apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KThreesConfig
metadata:
  name: agent
spec:
  version: v1.35.4+k3s1
  files:
  - path: /etc/app/app.ini
    contentFrom:
      configMap: {name: app, key: app.ini}
  additionalUserData:
    cloudConfig: |
      timezone: Europe/Berlin
`

// Offline, a file from a ConfigMap shows which ConfigMap it would come from, with
// the permissions the controller gives it (0644, not a Secret's 0600), and the
// user's cloud-config keys are in the output.
func TestRenderShowsConfigMapFilesAndTheFragment(t *testing.T) {
	out, stderr, code := renderArgs(t, configMapFileManifest)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"PLACEHOLDER: content of ConfigMap app, key app.ini", "\ntimezone: Europe/Berlin\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var r rendered
	if err := yaml.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	for _, f := range r.WriteFiles {
		if f.Path == "/etc/app/app.ini" && f.Permissions != "0644" {
			t.Errorf("/etc/app/app.ini written %s, want 0644", f.Permissions)
		}
	}
}
