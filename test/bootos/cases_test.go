package bootos

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
)

const (
	version   = "v1.36.3+k3s1"
	serverURL = "https://cp.example.com:6443"
	token     = "K10abc::server:0123456789abcdef"
	agentTok  = "K10abc::node:fedcba9876543210"
	// pwHash is a crypt(3) SHA-512 hash.
	pwHash = "$6$rounds=4096$saltsalt$Q9C0mBFSmQ0mRFfXQbqqCTnWSXqWzTn6sFXnG2hUJYYxVvb0tnH1kA3m6vQd0iA1Hq3y1oRbq1kQv5Nc0Vx4r/"
)

// bootCase is one KThreesConfig rendered by the product's renderer, and what
// must land on the machine beyond the files (which every case checks).
type bootCase struct {
	name string
	in   cloudinit.Input
	// k3sConfig are keys config.yaml must hold, with their values.
	k3sConfig map[string]any
	// calls are the recorded calls and user commands, in order (a subsequence of
	// the log: cloud-init's own service calls may come between).
	calls []string
	// check, if set, checks what else the case must have done.
	check func(t *testing.T, m *machine)
}

// fragment is a spec.additionalUserData.cloudConfig whose keys cloud-init applies
// without network: the timezone (config stage) and the final message (final
// stage, after runcmd).
const fragment = "timezone: Europe/Berlin\nfinal_message: capk3s fragment applied\n"

// checkFragment: cloud-init applied the fragment's keys.
func checkFragment(t *testing.T, m *machine) {
	t.Helper()
	if got := m.read("/etc/timezone"); got != "Europe/Berlin\n" {
		t.Errorf("/etc/timezone = %q, want the fragment's Europe/Berlin", got)
	}
	if got := m.read("/var/log/capk3s/cloud-init-output.log"); !strings.Contains(got, "capk3s fragment applied") {
		t.Errorf("cloud-init-output.log lacks the fragment's final_message")
	}
}

func gzipped(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return b.String()
}

func jsonValue(v any) apiextensionsv1.JSON {
	b, _ := json.Marshal(v)
	return apiextensionsv1.JSON{Raw: b}
}

// hostile is content that YAML, sh or a template engine would change if it
// were carried carelessly.
const hostile = "#!/bin/sh\n{{ ds.meta_data.hostname }} ${HOME} $(id) `id` 'q' \"dq\" \\ \r\n" +
	"= \x00\x01 tab\there ü 日本 🙂\n---\n- not: yaml\n"

// userFiles use every encoding and owner form, with hostile contents.
func userFiles() []cloudinit.File {
	return []cloudinit.File{
		{Path: "/etc/capk3s-test/plain", Content: hostile},
		{Path: "/etc/capk3s-test/equals", Content: "="},
		{Path: "/etc/capk3s-test/empty", Content: ""},
		{Path: "/etc/capk3s-test/b64", Encoding: bootstrapv1.Base64, Content: base64.StdEncoding.EncodeToString([]byte(hostile)), Permissions: "0755"},
		{Path: "/etc/capk3s-test/gz", Encoding: bootstrapv1.Gzip, Content: gzipped(hostile), Permissions: "0400"},
		{Path: "/etc/capk3s-test/gzb64", Encoding: bootstrapv1.GzipBase64, Content: base64.StdEncoding.EncodeToString([]byte(gzipped(hostile)))},
		{Path: "/etc/capk3s-test/from-secret", Content: "s3cr3t\n", FromSecret: true},
		{Path: "/etc/capk3s-test/setuid", Content: "x", Permissions: "4750"},
		{Path: "/etc/capk3s-test/dir with space/it's", Content: "quoted path\n"},
		// Owners: an account of spec.users, its groups, the image's, IDs.
		{Path: "/home/ops/.config/app.conf", Owner: "ops:ops", Content: "ops\n"},
		{Path: "/etc/capk3s-test/docker-group", Owner: "root:docker", Content: "d\n"},
		{Path: "/etc/capk3s-test/primary-only", Owner: "auditor:auditors", Content: "a\n", Permissions: "0640"},
		{Path: "/etc/capk3s-test/image-account", Owner: "nobody:nogroup", Content: "n\n"},
		{Path: "/etc/capk3s-test/user-only", Owner: "ops", Content: "u\n"},
		{Path: "/etc/capk3s-test/uid", Owner: "1500:1500", Content: "i\n", Permissions: "0600"},
		{Path: "/etc/capk3s-test/zero", Owner: "0:0", Content: "z\n"},
		{Path: "/etc/capk3s-test/uid-and-name", Owner: "1501:ops", Content: "m\n"},
		{Path: "/etc/capk3s-test/group-id", Owner: ":1502", Content: "g\n"},
	}
}

// osSetup is every OS setup field cloud-config carries.
func osSetup(spec *bootstrapv1.KThreesConfigSpec) {
	spec.BootCommands = []string{"echo boot-1 >> /var/log/capk3s/calls", "mkdir -p /var/lib/early"}
	spec.NTP = &bootstrapv1.NTP{Enabled: ptr.To(true), Servers: []string{"0.pool.ntp.org", "time.example.com"}}
	spec.Users = []bootstrapv1.User{
		{
			Name: "ops", Gecos: "Operations", Groups: "adm, docker", HomeDir: "/home/ops", Shell: "/bin/bash",
			PrimaryGroup: "ops", Sudo: "ALL=(ALL) NOPASSWD:ALL",
			SSHAuthorizedKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOps ops@example.com"},
			PasswdFrom:        &bootstrapv1.PasswdSource{Secret: bootstrapv1.SecretKeyReference{Name: "pw", Key: "hash"}},
		},
		// A primary group alone: cloud-init would not create it for useradd.
		{Name: "auditor", PrimaryGroup: "auditors"},
		{Name: "retired", Inactive: ptr.To(true)},
	}
	spec.DiskSetup = &bootstrapv1.DiskSetup{
		Partitions: []bootstrapv1.Partition{
			{Device: "/dev/sdb", Layout: ptr.To(true), TableType: "gpt", Overwrite: ptr.To(false)},
		},
		Filesystems: []bootstrapv1.Filesystem{
			{Device: "/dev/sdb", Partition: "1", Filesystem: "ext4", Label: "k3s-data", ExtraOpts: []string{"-E", "lazy_itable_init=1"}},
		},
	}
	spec.Mounts = []bootstrapv1.MountPoints{{"LABEL=k3s-data", "/var/lib/rancher", "ext4", "defaults,noatime"}}
}

func cases() []bootCase {
	serverInit := cloudinit.Input{
		Role: cloudinit.ServerInit, Version: version, Token: token, AgentToken: agentTok,
		TLSSANs: []string{"cp.example.com"},
		Certificates: []cloudinit.File{
			{Path: "/var/lib/rancher/k3s/server/tls/server-ca.crt", Content: "-----BEGIN CERTIFICATE-----\nU0VSVkVS\n-----END CERTIFICATE-----\n"},
			{Path: "/var/lib/rancher/k3s/server/tls/server-ca.key", Content: "-----BEGIN EC PRIVATE KEY-----\nS0VZ\n-----END EC PRIVATE KEY-----\n"},
		},
		Files:         userFiles(),
		UserPasswords: map[string]string{"ops": pwHash},
		RegistryCredentials: map[string]cloudinit.RegistryCredentials{
			"registry.example.com:5000": {Username: "u", Password: "p'w\"d", CACert: "-----BEGIN CERTIFICATE-----\nUkVH\n-----END CERTIFICATE-----\n"},
		},
		EtcdS3: &cloudinit.EtcdS3{AccessKeyID: "AKIAEXAMPLE", SecretAccessKey: "wJalr/K7MDENG+bPxRfiCY"},
		Spec: bootstrapv1.KThreesConfigSpec{
			PreK3sCommands:  []string{"echo pre-1 >> /var/log/capk3s/calls", "echo \"pre '2'\" >> /var/log/capk3s/calls"},
			PostK3sCommands: []string{"echo post-1 >> /var/log/capk3s/calls"},
			AgentConfig: bootstrapv1.KThreesAgentConfig{
				NodeLabels: []string{"tier=control"},
				Registries: &bootstrapv1.Registries{
					Mirrors: []bootstrapv1.RegistryMirror{{Registry: "docker.io", Endpoints: []string{"https://mirror.example.com"}}},
					Configs: []bootstrapv1.RegistryConfig{{
						Registry:   "registry.example.com:5000",
						AuthSecret: &bootstrapv1.SecretReference{Name: "reg-auth"},
						CASecret:   &bootstrapv1.SecretReference{Name: "reg-ca"},
					}},
				},
			},
			ServerConfig: bootstrapv1.KThreesServerConfig{
				ClusterCidr: "10.42.0.0/16", DisableComponents: []string{"traefik"},
				Etcd: &bootstrapv1.Etcd{
					Snapshots: &bootstrapv1.EtcdSnapshots{
						Schedule: "0 */6 * * *", Retention: ptr.To[int32](5),
						S3: &bootstrapv1.EtcdSnapshotsS3{
							Bucket: "backups", Endpoint: "minio.example.com:9000",
							CredentialsSecret: &bootstrapv1.SecretReference{Name: "s3"},
						},
					},
					RestoreFrom: "etcd-snapshot-cp-0-1700000000",
				},
				ExtraConfig: map[string]apiextensionsv1.JSON{"secrets-encryption": jsonValue(true)},
			},
		},
	}
	osSetup(&serverInit.Spec)

	serverJoin := cloudinit.Input{
		Role: cloudinit.ServerJoin, Version: version, Token: token, AgentToken: agentTok,
		Datastore: &cloudinit.Datastore{
			Endpoint: "postgres://k3s:pa55@db.example.com:5432/k3s?sslmode=verify-full",
			CACert:   "-----BEGIN CERTIFICATE-----\nREJDQQ==\n-----END CERTIFICATE-----\n",
		},
		Spec: bootstrapv1.KThreesConfigSpec{
			ServerConfig: bootstrapv1.KThreesServerConfig{
				Datastore:   &bootstrapv1.Datastore{EndpointSecret: bootstrapv1.SecretKeyReference{Name: "pg", Key: "endpoint"}, CASecret: &bootstrapv1.SecretKeyReference{Name: "pg", Key: "ca"}},
				ExtraConfig: map[string]apiextensionsv1.JSON{"write-kubeconfig-mode": jsonValue("0640")},
			},
			AgentConfig: bootstrapv1.KThreesAgentConfig{
				ExtraConfig: map[string]apiextensionsv1.JSON{"node-ip": jsonValue("10.0.0.11")},
			},
		},
	}

	agent := cloudinit.Input{
		Role: cloudinit.Agent, Version: version, Token: agentTok, ServerURL: serverURL,
		Files: []cloudinit.File{
			{Path: "/etc/capk3s-test/agent", Content: hostile, FromSecret: true},
			// As the controller resolves contentFrom.configMap: not secret, so 0644.
			{Path: "/etc/capk3s-test/from-configmap", Content: "[main]\nlevel = 3\n"},
		},
		Spec: bootstrapv1.KThreesConfigSpec{
			AdditionalUserData: bootstrapv1.AdditionalUserData{CloudConfig: fragment},
			PreK3sCommands:     []string{"echo pre-agent >> /var/log/capk3s/calls"},
			AgentConfig: bootstrapv1.KThreesAgentConfig{
				AirGapped: true, PrivateRegistry: "/etc/capk3s-test/registries.yaml",
				NodeTaints: []string{"dedicated=x:NoSchedule"},
			},
		},
	}

	return []bootCase{
		{
			name: "server-init", in: serverInit,
			k3sConfig: map[string]any{
				"cluster-init": true, "token": token, "agent-token": agentTok, "cluster-cidr": "10.42.0.0/16",
				"disable": []any{"traefik"}, "node-label": []any{"tier=control"}, "secrets-encryption": true,
				"etcd-snapshot-schedule-cron": "0 */6 * * *", "etcd-s3-bucket": "backups",
			},
			calls: []string{
				"boot-1", "pre-1", "pre '2'",
				"curl -sfL https://get.k3s.io",
				"install server version=" + version + " skip-download= skip-start=true",
				"k3s server --cluster-reset --cluster-reset-restore-path=etcd-snapshot-cp-0-1700000000 aws-key=AKIAEXAMPLE",
				"systemctl start k3s",
				"post-1",
				"systemctl is-active --quiet k3s",
			},
		},
		{
			name: "server-join-datastore", in: serverJoin,
			k3sConfig: map[string]any{
				"token": token, "datastore-endpoint": "postgres://k3s:pa55@db.example.com:5432/k3s?sslmode=verify-full",
				"write-kubeconfig-mode": "0640", "node-ip": "10.0.0.11",
			},
			calls: []string{
				"curl -sfL https://get.k3s.io",
				"install server version=" + version + " skip-download= skip-start=",
				"systemctl is-active --quiet k3s",
			},
		},
		{
			name: "agent-air-gapped", in: agent,
			k3sConfig: map[string]any{
				"server": serverURL, "token": agentTok, "private-registry": "/etc/capk3s-test/registries.yaml",
				// capk3s adds the uninitialized taint to agents; CAPI removes it.
				"node-taint": []any{"dedicated=x:NoSchedule", "node.cluster.x-k8s.io/uninitialized:NoSchedule"},
			},
			calls: []string{
				"pre-agent",
				"install agent version=" + version + " skip-download=true skip-start=",
				"systemctl is-active --quiet k3s-agent",
			},
			check: checkFragment,
		},
	}
}
