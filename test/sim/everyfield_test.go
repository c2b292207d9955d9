package sim

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/token"
)

// everyNewField is a first server whose spec carries every field added for production
// platforms: any k3s setting (extraConfig, both roles), etcd snapshots to S3 with a
// restore, and the OS setup (boot commands, NTP, users with a password from a Secret,
// disks and mounts), in the given format.
func everyNewField(t *testing.T, format bootstrapv1.Format) cloudinit.Input {
	t.Helper()
	ca := mustCAs(t, theCAs)
	j := mustJoinTokens(t, token.Token{Server: "s3rver", Agent: "ag3nt"}, ca.serverCA)
	os := osSetupInput(format)
	in := cloudinit.Input{Role: cloudinit.ServerInit, Version: testVersion, Token: j.server, AgentToken: j.agent,
		Certificates: ca.files, TLSSANs: []string{"cp.example.com"}, UserPasswords: os.UserPasswords,
		EtcdS3: &cloudinit.EtcdS3{AccessKeyID: "AKIAEXAMPLE", SecretAccessKey: "s3cr3tkey"}}
	in.Spec = os.Spec
	in.Spec.ServerConfig.ExtraConfig = map[string]apiextensionsv1.JSON{
		"secrets-encryption": {Raw: []byte(`true`)},
		"flannel-backend":    {Raw: []byte(`"wireguard-native"`)},
	}
	in.Spec.AgentConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"node-ip": {Raw: []byte(`"10.0.0.5"`)}}
	in.Spec.ServerConfig.Etcd = &bootstrapv1.Etcd{
		Snapshots: &bootstrapv1.EtcdSnapshots{Schedule: "0 */6 * * *", Retention: ptr.To[int32](7), Compress: true,
			S3: &bootstrapv1.EtcdSnapshotsS3{Bucket: "backups", Region: "eu-west-1",
				CredentialsSecret: &bootstrapv1.SecretReference{Name: "creds"}}},
		RestoreFrom: "etcd-snapshot-cp-0-1",
	}
	return in
}

// A config carrying every new field renders in both formats, and the data boots in the
// simulator: its checks (k3s options against the one option list, the OS setup, the
// etcd snapshot files, the CAs) all pass, and each field reached the machine.
func TestEveryNewFieldRendersAndBoots(t *testing.T) {
	t.Parallel()
	for _, format := range []bootstrapv1.Format{bootstrapv1.CloudConfig, bootstrapv1.Ignition} {
		t.Run(string(format), func(t *testing.T) {
			t.Parallel()
			b, err := readBootData(mustRender(t, everyNewField(t, format)), string(format))
			if err != nil {
				t.Fatal(err)
			}
			if err := b.checkStatic(); err != nil {
				t.Fatalf("the data does not boot: %v", err)
			}
			for key, want := range map[string]any{
				"secrets-encryption": true, "flannel-backend": "wireguard-native", "node-ip": "10.0.0.5",
				"etcd-snapshot-schedule-cron": "0 */6 * * *", "etcd-snapshot-retention": float64(7),
				"etcd-snapshot-compress": true, "etcd-s3": true, "etcd-s3-bucket": "backups", "etcd-s3-region": "eu-west-1",
			} {
				if got := b.k3sConfig[key]; !equalOption(got, want) {
					t.Errorf("config.yaml %s = %v (%T), want %v", key, got, got, want)
				}
			}
			if _, inline := b.k3sConfig["etcd-s3-secret-key"]; inline {
				t.Error("the S3 secret key is in config.yaml")
			}
			if env := envVars(string(b.files[k3sEnvPath])); env["AWS_SECRET_ACCESS_KEY"] != "s3cr3tkey" {
				t.Errorf("the S3 credentials are not in %s: %q", k3sEnvPath, b.files[k3sEnvPath])
			}
			if !slices.ContainsFunc(b.commands, func(c string) bool { return strings.Contains(c, "--cluster-reset-restore-path=") }) {
				t.Errorf("the first server does not restore: %q", b.commands)
			}
			o := b.os
			if !o.bootFirst || len(o.bootCommands) == 0 || o.ntp == nil || len(o.users) != 2 || len(o.mounts) != 2 {
				t.Errorf("the OS setup did not reach the machine: %+v", o)
			}
		})
	}
}

// equalOption compares a k3s option as read back from YAML or JSON.
func equalOption(got, want any) bool {
	switch w := want.(type) {
	case float64:
		switch g := got.(type) {
		case float64:
			return g == w
		case int:
			return float64(g) == w
		case int64:
			return float64(g) == w
		}
		return false
	}
	return got == want
}
