package etcdsnapshot

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// An S3 bucket on AWS with the settings left at k3s's defaults (no endpoint, no
// region): k3s builds its S3 client from the request's block as sent, and refuses an
// empty endpoint; the request carries what k3s's CLI would send.
func TestSnapshotToS3WithK3sDefaultSettings(t *testing.T) {
	f := newFixture(t, func(kcp *controlplanev1.KThreesControlPlane) {
		kcp.Spec.KThreesConfigSpec.ServerConfig.Etcd = &bootstrapv1.Etcd{Snapshots: &bootstrapv1.EtcdSnapshots{S3: &bootstrapv1.EtcdSnapshotsS3{
			Bucket: "backups", CredentialsSecret: &bootstrapv1.SecretReference{Name: "s3-creds"},
		}}}
	})
	must(t, env.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "s3-creds"},
		Data:       map[string][]byte{bootstrapv1.EtcdS3AccessKeyIDKey: []byte("AKID"), bootstrapv1.EtcdS3SecretAccessKeyKey: []byte("SECRET")},
	}))
	got := run(t, f.reconciler(), f.snapshot(t, controlplanev1.KThreesEtcdSnapshotSpec{}), 5)
	if got.Status.Phase != controlplanev1.EtcdSnapshotSucceeded {
		t.Fatalf("phase %s, error %q", got.Status.Phase, got.Status.Error)
	}
	s3, _ := f.k3s.request()["s3"].(map[string]any)
	if s3["endpoint"] != "s3.amazonaws.com" || s3["region"] != "us-east-1" || s3["timeout"] != "5m0s" {
		t.Fatalf("s3 request endpoint %v region %v timeout %v, want k3s's defaults s3.amazonaws.com, us-east-1, 5m0s", s3["endpoint"], s3["region"], s3["timeout"])
	}
}

// The control plane's own endpoint and region are sent as they are.
func TestS3RequestKeepsTheControlPlanesEndpointAndRegion(t *testing.T) {
	got, err := s3Request(context.Background(), env.Client, "default", &bootstrapv1.EtcdSnapshotsS3{Bucket: "b", Endpoint: "minio.example.com:9000", Region: "eu-west-3"}, defaultS3Timeout)
	if err != nil {
		t.Fatal(err)
	}
	if got.Endpoint != "minio.example.com:9000" || got.Region != "eu-west-3" {
		t.Fatalf("endpoint %q region %q", got.Endpoint, got.Region)
	}
}

// k3s takes an on-demand snapshot's folder from the request's dir alone: with
// snapshots.directory set, the file lands there, compressed when the control plane
// compresses its snapshots.
func TestSnapshotLandsInTheControlPlanesDirectory(t *testing.T) {
	f := newFixture(t, func(kcp *controlplanev1.KThreesControlPlane) {
		kcp.Spec.KThreesConfigSpec.ServerConfig.Etcd = &bootstrapv1.Etcd{Snapshots: &bootstrapv1.EtcdSnapshots{
			Directory: "/data/etcd-snapshots", Compress: true,
		}}
	})
	got := run(t, f.reconciler(), f.snapshot(t, controlplanev1.KThreesEtcdSnapshotSpec{}), 5)
	if got.Status.Phase != controlplanev1.EtcdSnapshotSucceeded {
		t.Fatalf("phase %s, error %q", got.Status.Phase, got.Status.Error)
	}
	req := f.k3s.request()
	if req["dir"] != "/data/etcd-snapshots" || req["compress"] != true {
		t.Fatalf("request dir %v compress %v", req["dir"], req["compress"])
	}
	if res := got.Status.Snapshot; !strings.HasPrefix(res.Location, "file:///data/etcd-snapshots/") || !strings.HasSuffix(res.Name, ".zip") {
		t.Fatalf("result %+v, want a zip in /data/etcd-snapshots", res)
	}
}
