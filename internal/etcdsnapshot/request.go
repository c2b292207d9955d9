package etcdsnapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/k3s/supervisor"
	"github.com/capk3s/capk3s/internal/token"
)

// defaultNamePrefix is k3s's own CLI default for etcd-snapshot-name on save.
const defaultNamePrefix = "on-demand"

// requestedName is the name sent to k3s: the prefix and eight characters of the
// object's UID, which no other snapshot of the cluster carries.
func requestedName(s *controlplanev1.KThreesEtcdSnapshot) string {
	prefix := s.Spec.NamePrefix
	if prefix == "" {
		prefix = defaultNamePrefix
	}
	uid := string(s.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return prefix + "-" + uid
}

// s3Settings is the control plane's S3 configuration, nil without one.
func s3Settings(kcp *controlplanev1.KThreesControlPlane) *bootstrapv1.EtcdSnapshotsS3 {
	etcd := kcp.Spec.KThreesConfigSpec.ServerConfig.Etcd
	if etcd == nil || etcd.Snapshots == nil {
		return nil
	}
	return etcd.Snapshots.S3
}

// localSettings are the folder and compression of the control plane's snapshots,
// which a request must carry for an on-demand snapshot to follow them: k3s takes
// the folder from the request's dir alone (pkg/etcd/snapshot_handler.go withRequest
// copies no etcd-snapshot-dir of the server's, so without dir the file lands in the
// default folder under the data dir); `k3s etcd-snapshot save` on a server sends
// both from its config.yaml (pkg/cli/etcdsnapshot/etcd_snapshot.go commandSetup;
// v1.34.9, v1.35.4, v1.36.2). Empty dir: k3s's default folder.
func localSettings(kcp *controlplanev1.KThreesControlPlane) (dir string, compress bool) {
	etcd := kcp.Spec.KThreesConfigSpec.ServerConfig.Etcd
	if etcd == nil || etcd.Snapshots == nil {
		return "", false
	}
	return etcd.Snapshots.Directory, etcd.Snapshots.Compress
}

// k3s's defaults for the S3 settings a request must carry in full: the CLI's flag
// defaults, which are also the servers' (pkg/cli/cmds/etcd_snapshot.go,
// pkg/cli/cmds/server.go; v1.34.9, v1.35.4, v1.36.2). k3s does not default a
// request's block (withRequest sets EtcdS3 to it as sent), and minio refuses an
// empty endpoint, which k3s answers 400 "failed to initialize S3 client"
// (pkg/etcd/s3/s3.go GetClient).
const (
	defaultS3Endpoint = "s3.amazonaws.com"
	defaultS3Region   = "us-east-1"
)

// defaultS3Timeout is k3s's etcd-s3-timeout default (pkg/cli/cmds/server.go; v1.34.9,
// v1.35.4, v1.36.2).
const defaultS3Timeout = 5 * time.Minute

// s3Timeout is the etcd-s3-timeout the servers run with: the one their extraConfig
// sets, else k3s's default. A save request must carry it, because k3s uses the
// request's S3 settings instead of the server's, timeout included, and a zero
// timeout fails the upload's first call at once.
func s3Timeout(kcp *controlplanev1.KThreesControlPlane) time.Duration {
	raw, ok := kcp.Spec.KThreesConfigSpec.ServerConfig.ExtraConfig["etcd-s3-timeout"]
	if !ok {
		return defaultS3Timeout
	}
	var s string
	if err := json.Unmarshal(raw.Raw, &s); err != nil {
		return defaultS3Timeout
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return defaultS3Timeout
	}
	return d
}

// wantsS3 says whether the snapshot is uploaded: location S3, or unset with S3 configured.
func wantsS3(s *controlplanev1.KThreesEtcdSnapshot, kcp *controlplanev1.KThreesControlPlane) bool {
	switch s.Spec.Location {
	case controlplanev1.EtcdSnapshotLocationLocal:
		return false
	case controlplanev1.EtcdSnapshotLocationS3:
		return true
	}
	return s3Settings(kcp) != nil
}

// newClient reads what the supervisor call needs: the endpoint, the server CA and
// the join token. A missing piece is an error that names it (never the token).
func newClientFor(ctx context.Context, r client.Reader, cluster *clusterv1.Cluster) (*supervisor.Client, error) {
	ep := cluster.Spec.ControlPlaneEndpoint
	if !ep.IsValid() {
		return nil, fmt.Errorf("the Cluster %s has no control plane endpoint yet", cluster.Name)
	}
	ca := &corev1.Secret{}
	caKey := client.ObjectKey{Namespace: cluster.Namespace, Name: secret.Name(cluster.Name, secret.ClusterCA)}
	if err := r.Get(ctx, caKey, ca); err != nil {
		return nil, fmt.Errorf("reading the server CA Secret %s: %w", caKey.Name, err)
	}
	tok, found, err := token.Lookup(ctx, r, cluster)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("the join token Secret %s does not exist", token.SecretName(cluster.Name))
	}
	return &supervisor.Client{
		Endpoint: fmt.Sprintf("%s:%d", ep.Host, ep.Port),
		CACert:   ca.Data[secret.TLSCrtDataName],
		Password: tok.Server,
	}, nil
}

// s3Request is the S3 block of the request: the control plane's settings with
// k3s's defaults where they are empty (k3s defaults nothing of a request's), the
// keys from its credentials Secret (k3s ignores the server's own keys for this
// request), the endpoint CA where every server has it, and the S3 timeout (see
// s3Timeout). Every request with S3 is built here.
func s3Request(ctx context.Context, r client.Reader, namespace string, s3 *bootstrapv1.EtcdSnapshotsS3, timeout time.Duration) (*supervisor.S3, error) {
	out := &supervisor.S3{
		Bucket: s3.Bucket, Endpoint: s3.Endpoint, Region: s3.Region, Folder: s3.Folder,
		Insecure: s3.Insecure, SkipSSLVerify: s3.SkipSSLVerify, Timeout: metav1.Duration{Duration: timeout},
	}
	if out.Endpoint == "" {
		out.Endpoint = defaultS3Endpoint
	}
	if out.Region == "" {
		out.Region = defaultS3Region
	}
	if s3.EndpointCASecret != nil {
		out.EndpointCA = cloudinit.EtcdS3CAPath
	}
	if ref := s3.CredentialsSecret; ref != nil {
		cred := &corev1.Secret{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, cred); err != nil {
			return nil, fmt.Errorf("reading the S3 credentials Secret %s: %w", ref.Name, err)
		}
		out.AccessKey = string(cred.Data[bootstrapv1.EtcdS3AccessKeyIDKey])
		out.SecretKey = string(cred.Data[bootstrapv1.EtcdS3SecretAccessKeyKey])
	}
	return out, nil
}
