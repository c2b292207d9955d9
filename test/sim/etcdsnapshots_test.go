package sim

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/token"
)

// etcdData renders a server with snapshots to S3 and a restore, as the bootstrap
// provider would, and reads it as the simulator does.
func etcdData(t *testing.T, role cloudinit.Role) *bootData {
	t.Helper()
	ca := mustCAs(t, theCAs)
	j := mustJoinTokens(t, token.Token{Server: "s3rver", Agent: "ag3nt"}, ca.serverCA)
	in := cloudinit.Input{Role: role, Version: testVersion, Token: j.server, AgentToken: j.agent,
		Certificates: ca.files, TLSSANs: []string{"cp.example.com"},
		EtcdS3: &cloudinit.EtcdS3{AccessKeyID: "AKIAEXAMPLE", SecretAccessKey: "s3cr3tkey", EndpointCA: "-----BEGIN CERTIFICATE-----\nQQ==\n-----END CERTIFICATE-----\n"}}
	if role == cloudinit.ServerJoin {
		in.ServerURL = testEndpoint
	}
	in.Spec.ServerConfig.Etcd = &bootstrapv1.Etcd{
		Snapshots: &bootstrapv1.EtcdSnapshots{Schedule: "0 */6 * * *", Retention: ptr.To[int32](3), S3: &bootstrapv1.EtcdSnapshotsS3{
			Bucket: "backups", Folder: "a", EndpointCASecret: &bootstrapv1.SecretKeyReference{Name: "ca", Key: "ca.crt"},
			CredentialsSecret: &bootstrapv1.SecretReference{Name: "creds"},
		}},
		RestoreFrom: "etcd-snapshot-cp-0-1",
	}
	b, _ := parseRendered(t, mustRender(t, in))
	return b
}

func TestCheckEtcd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		role    cloudinit.Role
		edit    func(b *bootData)
		wantErr string
	}{
		{name: "rendered first server, restoring", role: cloudinit.ServerInit},
		{name: "rendered joining server", role: cloudinit.ServerJoin},
		{name: "inline secret key", role: cloudinit.ServerJoin,
			edit: func(b *bootData) { b.k3sConfig["etcd-s3-secret-key"] = "s3cr3tkey" }, wantErr: "must not be written into config.yaml"},
		// k3s server skips a key it has no flag for (k3smodel, pkg/configfilearg).
		{name: "an unknown etcd option is skipped", role: cloudinit.ServerJoin,
			edit: func(b *bootData) { b.k3sConfig["etcd-snapshot-schedule"] = "x" }},
		{name: "half the credentials", role: cloudinit.ServerJoin,
			edit: func(b *bootData) { b.files[k3sEnvPath] = []byte("AWS_ACCESS_KEY_ID='x'\n") }, wantErr: "only one of"},
		{name: "CA file missing", role: cloudinit.ServerJoin,
			edit: func(b *bootData) { delete(b.files, b.str("etcd-s3-endpoint-ca")) }, wantErr: "which the data does not write"},
		{name: "a joining server restores", role: cloudinit.ServerJoin,
			edit: func(b *bootData) {
				b.commands = append(b.commands, "k3s server --cluster-reset --cluster-reset-restore-path=x")
			}, wantErr: "a joining server restores"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := etcdData(t, tc.role)
			if tc.edit != nil {
				tc.edit(b)
			}
			err := b.checkStatic()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("checkStatic() = %v", err)
				}
				if v := envVars(string(b.files[k3sEnvPath])); v["AWS_SECRET_ACCESS_KEY"] != "s3cr3tkey" {
					t.Errorf("environment file = %q", b.files[k3sEnvPath])
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("checkStatic() = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
