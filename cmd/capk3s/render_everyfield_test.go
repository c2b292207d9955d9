package main

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// everyNewFieldManifest is a control plane carrying every field added for production
// platforms: machine naming and taints, any k3s setting, etcd snapshots to S3 with a
// restore, and the OS setup.
const everyNewFieldManifest = `apiVersion: controlplane.cluster.x-k8s.io/v1beta2
kind: KThreesControlPlane
metadata:
  name: cp
spec:
  version: v1.35.4+k3s1
  machineNaming: {template: "{{ .cluster.name }}-server-{{ .random }}"}
  machineTemplate:
    spec:
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerMachineTemplate, name: cp}
      taints: [{key: example.com/servers-only, value: "true", effect: NoSchedule, propagation: Always}]
  kthreesConfigSpec:
    bootCommands: ["modprobe br_netfilter"]
    ntp: {servers: [time.example.com]}
    users:
    - {name: ops, groups: wheel, passwdFrom: {secret: {name: ops-password, key: hash}}}
    diskSetup:
      partitions: [{device: /dev/sdb, layout: true, tableType: gpt}]
      filesystems: [{device: /dev/sdb, partition: "1", filesystem: ext4, label: data}]
    mounts: [[LABEL=data, /var/lib/rancher]]
    serverConfig:
      extraConfig: {secrets-encryption: true, flannel-backend: wireguard-native}
      etcd:
        restoreFrom: etcd-snapshot-cp-0-1700000000
        snapshots:
          schedule: "0 */6 * * *"
          s3: {bucket: backups, credentialsSecret: {name: s3-creds}}
    agentConfig:
      extraConfig: {node-ip: 10.0.0.5}
`

// capk3s render shows every new field that reaches the machine, with placeholders
// for the Secrets it names.
func TestRenderShowsEveryNewField(t *testing.T) {
	out, stderr, code := renderArgs(t, everyNewFieldManifest)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	cfg := k3sConfigOf(t, out)
	for key, want := range map[string]any{
		"secrets-encryption": true, "flannel-backend": "wireguard-native", "node-ip": "10.0.0.5",
		"etcd-snapshot-schedule-cron": "0 */6 * * *", "etcd-s3": true, "etcd-s3-bucket": "backups",
	} {
		if cfg[key] != want {
			t.Errorf("config.yaml %s = %v, want %v", key, cfg[key], want)
		}
	}
	var cc struct {
		BootCmd []string       `json:"bootcmd"`
		NTP     map[string]any `json:"ntp"`
		Users   []struct {
			Name   string `json:"name"`
			Passwd string `json:"passwd"`
		} `json:"users"`
		Mounts [][]string `json:"mounts"`
		rendered
	}
	if err := yaml.Unmarshal([]byte(out), &cc); err != nil {
		t.Fatal(err)
	}
	if len(cc.BootCmd) != 1 || cc.NTP == nil || len(cc.Users) != 1 || len(cc.Mounts) != 1 {
		t.Errorf("the OS setup is not shown:\n%s", out)
	}
	if !strings.Contains(strings.Join(cc.RunCmd, "\n"), "--cluster-reset-restore-path='etcd-snapshot-cp-0-1700000000'") {
		t.Errorf("the first server's restore is not shown: %q", cc.RunCmd)
	}
}
