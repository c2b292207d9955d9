package main

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const osSetupManifest = `apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KThreesConfig
metadata:
  name: worker
spec:
  version: v1.35.4+k3s1
  bootCommands: ["modprobe br_netfilter"]
  ntp: {servers: [time.example.com]}
  users:
  - name: ops
    groups: wheel
    sshAuthorizedKeys: ["ssh-ed25519 AAAA ops"]
    passwdFrom: {secret: {name: ops-password, key: hash}}
  diskSetup:
    partitions: [{device: /dev/sdb, layout: true, tableType: gpt}]
    filesystems: [{device: /dev/sdb, partition: "1", filesystem: ext4, label: data}]
  mounts:
  - [LABEL=data, /var/lib/rancher]
`

// capk3s render goes through the renderer, so it shows the OS setup in both
// formats, with a placeholder where the password hash from the Secret goes.
func TestRenderShowsOSSetup(t *testing.T) {
	out, stderr, code := renderArgs(t, osSetupManifest)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var cc struct {
		BootCmd []string `json:"bootcmd"`
		NTP     struct {
			Servers []string `json:"servers"`
		} `json:"ntp"`
		Users []struct {
			Name   string `json:"name"`
			Passwd string `json:"passwd"`
		} `json:"users"`
		DiskSetup map[string]any `json:"disk_setup"`
		FSSetup   []any          `json:"fs_setup"`
		Mounts    [][]string     `json:"mounts"`
	}
	if err := yaml.Unmarshal([]byte(out), &cc); err != nil {
		t.Fatal(err)
	}
	if len(cc.BootCmd) != 1 || len(cc.NTP.Servers) != 1 || len(cc.Users) != 1 || cc.DiskSetup["/dev/sdb"] == nil || len(cc.FSSetup) != 1 || len(cc.Mounts) != 1 {
		t.Errorf("cloud-config lacks OS setup:\n%s", out)
	}
	if len(cc.Users) == 1 && cc.Users[0].Passwd != "$6$PLACEHOLDER$hash-from-Secret-ops-password-key-hash" {
		t.Errorf("passwd = %q, want the placeholder naming the Secret", cc.Users[0].Passwd)
	}

	out, stderr, code = renderArgs(t, osSetupManifest, "--format", "ignition")
	if code != 0 {
		t.Fatalf("ignition: exit %d: %s", code, stderr)
	}
	var ign struct {
		Passwd  struct{ Users []struct{ Name string } }
		Storage struct{ Disks, Filesystems []any }
		Systemd struct{ Units []struct{ Name string } }
	}
	if err := json.Unmarshal([]byte(out), &ign); err != nil {
		t.Fatal(err)
	}
	var units []string
	for _, u := range ign.Systemd.Units {
		units = append(units, u.Name)
	}
	if got := strings.Join(units, ","); got != "capk3s-bootstrap.service,capk3s-bootcmd.service,systemd-timesyncd.service,var-lib-rancher.mount" ||
		len(ign.Passwd.Users) != 1 || len(ign.Storage.Disks) != 1 || len(ign.Storage.Filesystems) != 1 {
		t.Errorf("Ignition lacks OS setup: units %s\n%s", got, out)
	}

	// What Ignition cannot say is refused by name.
	_, stderr, code = renderArgs(t, strings.Replace(osSetupManifest, "groups: wheel", "sudo: ALL=(ALL) ALL", 1), "--format", "ignition")
	if code != 1 || !strings.Contains(stderr, "spec.users[0].sudo") {
		t.Errorf("sudo for Ignition: exit %d, %s", code, stderr)
	}
}
