package etcdsnapshot

import (
	"context"
	"errors"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s/supervisor"
)

// SupervisorClient is the client of the cluster's k3s supervisor, as an on-demand
// snapshot uses it: the restore proves its snapshot and takes its safety snapshot
// through the same call.
func SupervisorClient(ctx context.Context, r client.Reader, cluster *clusterv1.Cluster) (*supervisor.Client, error) {
	return newClientFor(ctx, r, cluster)
}

// S3Block is the S3 block of a request for the control plane's snapshots.s3, with
// its credentials, exactly as an on-demand snapshot sends it.
func S3Block(ctx context.Context, r client.Reader, kcp *controlplanev1.KThreesControlPlane) (*supervisor.S3, error) {
	s3 := s3Settings(kcp)
	if s3 == nil {
		return nil, errors.New("the control plane has no snapshots.s3")
	}
	return s3Request(ctx, r, kcp.Namespace, s3, s3Timeout(kcp))
}

// LocalSettings are the folder and compression a request must carry for its
// snapshot's copy on the server to follow the control plane's snapshots.directory
// and snapshots.compress, as an on-demand snapshot's does (localSettings).
func LocalSettings(kcp *controlplanev1.KThreesControlPlane) (dir string, compress bool) {
	return localSettings(kcp)
}
