package bootstrap

import (
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

func etcdSnapshots() *bootstrapv1.Etcd {
	return &bootstrapv1.Etcd{Snapshots: &bootstrapv1.EtcdSnapshots{
		Schedule: "0 */6 * * *", Retention: ptr.To[int32](10), Directory: "/var/lib/etcd-snapshots", Compress: true,
		S3: &bootstrapv1.EtcdSnapshotsS3{
			Bucket: "backups", Endpoint: "minio.example.com:9000",
			EndpointCASecret:  &bootstrapv1.SecretKeyReference{Name: "s3-ca", Key: "ca.crt"},
			CredentialsSecret: &bootstrapv1.SecretReference{Name: "s3-creds"},
		},
	}}
}

func TestValidateEtcd(t *testing.T) {
	const inlineSecret = "wJalrXUtnFEMI/K7MDENG"
	tests := []struct {
		name   string
		modify func(*bootstrapv1.KThreesConfigSpec)
		want   []wantErr
	}{
		{name: "snapshots to S3", modify: func(*bootstrapv1.KThreesConfigSpec) {}},
		{name: "a restore from S3 by name", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.Etcd.RestoreFrom = "etcd-snapshot-cp-0-1" }},
		{name: "cron descriptor", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.Etcd.Snapshots.Schedule = "@every 1h" }},
		{name: "snapshots on an external datastore", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.Datastore = datastore() },
			want: []wantErr{{"spec.serverConfig.etcd.snapshots", "need k3s's embedded etcd"}}},
		{name: "a restore on an external datastore", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.ServerConfig.Datastore = datastore()
			s.ServerConfig.Etcd = &bootstrapv1.Etcd{RestoreFrom: "/snap"}
		}, want: []wantErr{{"spec.serverConfig.etcd", "need k3s's embedded etcd"}}},
		{name: "bad cron", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.Etcd.Snapshots.Schedule = "every six hours" },
			want: []wantErr{{"spec.serverConfig.etcd.snapshots.schedule", "cron expression of five fields"}}},
		{name: "six cron fields", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.Etcd.Snapshots.Schedule = "0 0 */6 * * *" },
			want: []wantErr{{"spec.serverConfig.etcd.snapshots.schedule", "cron expression"}}},
		{name: "relative directory", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.Etcd.Snapshots.Directory = "snaps" },
			want: []wantErr{{"spec.serverConfig.etcd.snapshots.directory", "absolute"}}},
		{name: "endpoint with a scheme", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.ServerConfig.Etcd.Snapshots.S3.Endpoint = "https://s3.example.com"
		},
			want: []wantErr{{"spec.serverConfig.etcd.snapshots.s3.endpoint", "without a scheme"}}},
		{name: "no bucket", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.Etcd.Snapshots.S3.Bucket = "" },
			want: []wantErr{{"spec.serverConfig.etcd.snapshots.s3.bucket", "Required value"}}},
		{name: "secret pasted as the CA key", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.ServerConfig.Etcd.Snapshots.S3.EndpointCASecret.Key = inlineSecret
		},
			want: []wantErr{{"spec.serverConfig.etcd.snapshots.s3.endpointCASecret.key", "not the value itself"}}},
		{name: "relative restore path without S3", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.ServerConfig.Etcd.Snapshots.S3 = nil
			s.ServerConfig.Etcd.RestoreFrom = "etcd-snapshot-cp-0-1"
		}, want: []wantErr{{"spec.serverConfig.etcd.restoreFrom", "absolute path"}}},
		{name: "a local snapshot file with S3 set (k3s restores it with S3 turned off)", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.ServerConfig.Etcd.RestoreFrom = "/var/lib/etcd-snapshots/etcd-snapshot-cp-0-1"
		}},
		{name: "a snapshot name with S3 that leaves the folder", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.ServerConfig.Etcd.RestoreFrom = "../other-cluster/etcd-snapshot-cp-0-1"
		}, want: []wantErr{{"spec.serverConfig.etcd.restoreFrom", "snapshot name in the bucket's folder"}}},
		{name: "a snapshot name with S3 that is a folder", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.ServerConfig.Etcd.RestoreFrom = "snapshots/"
		}, want: []wantErr{{"spec.serverConfig.etcd.restoreFrom", "snapshot name in the bucket's folder"}}},
		{name: "an inline S3 secret in extraConfig", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			raw, _ := json.Marshal(inlineSecret)
			s.ServerConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"etcd-s3-secret-key": {Raw: raw}, "etcd-s3-access-key": {Raw: []byte(`"AKIA"`)}}
		}, want: []wantErr{
			{"spec.serverConfig.extraConfig[etcd-s3-access-key]", "use serverConfig.etcd.snapshots.s3.credentialsSecret"},
			{"spec.serverConfig.extraConfig[etcd-s3-secret-key]", "use serverConfig.etcd.snapshots.s3.credentialsSecret (a Secret, never an inline S3 secret)"},
		}},
		{name: "a typed snapshot option in extraConfig", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.ServerConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"etcd-snapshot-retention": {Raw: []byte(`3`)}}
		}, want: []wantErr{{"spec.serverConfig.extraConfig[etcd-snapshot-retention]", "use serverConfig.etcd.snapshots.retention"}}},
		{name: "cluster-reset in extraConfig", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.ServerConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"cluster-reset-restore-path": {Raw: []byte(`"/snap"`)}}
		}, want: []wantErr{{"spec.serverConfig.extraConfig[cluster-reset-restore-path]", "use serverConfig.etcd.restoreFrom"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := validSpec()
			spec.ServerConfig.Etcd = etcdSnapshots()
			tt.modify(&spec)
			errs := ValidateSpec(&spec, field.NewPath("spec"))
			checkErrors(t, errs, tt.want)
			if msg := errs.ToAggregate(); msg != nil && strings.Contains(msg.Error(), inlineSecret) {
				t.Errorf("the error repeats the pasted secret: %v", msg)
			}
		})
	}
}
