package e2e

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/sim"
)

// withEtcdSnapshots gives the scenario's servers scheduled snapshots to S3, with
// the credentials from a Secret it creates, and a restore on the first server: the
// simulator refuses S3 credentials in config.yaml and a restore on any joining
// server, and records snapshots as k3s does. The snapshots go to a folder of the
// user's, which k3s does not create: the simulator fails the restore from S3 and
// every save unless the bootstrap data makes it.
func (s *scenario) withEtcdSnapshots() {
	s.t.Helper()
	s.objs.ControlPlane.Spec.KThreesConfigSpec.ServerConfig.Etcd = &bootstrapv1.Etcd{
		Snapshots: &bootstrapv1.EtcdSnapshots{Schedule: "0 */6 * * *", Retention: ptr.To[int32](5), S3: s.etcdS3(),
			Directory: "/var/lib/etcd-snapshots"},
		RestoreFrom: "etcd-snapshot-old-cluster-1700000000",
	}
	// The old cluster's snapshot is in the bucket: the simulator restores only what is.
	sim.PutS3Object(e2eS3Endpoint, e2eS3Bucket, s.ns+"/etcd-snapshot-old-cluster-1700000000")
}

// The simulated S3 the scenarios upload snapshots to; each scenario's folder is its
// namespace.
const (
	e2eS3Endpoint = "minio.example.com:9000"
	e2eS3Bucket   = "k3s-backups"
)

// etcdS3 creates the scenario's S3 credentials Secret and returns the S3 settings
// that use it: the simulator refuses S3 credentials in config.yaml.
func (s *scenario) etcdS3() *bootstrapv1.EtcdSnapshotsS3 {
	s.t.Helper()
	creds := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "etcd-backup-s3"},
		StringData: map[string]string{
			bootstrapv1.EtcdS3AccessKeyIDKey:     "AKIAEXAMPLE",
			bootstrapv1.EtcdS3SecretAccessKeyKey: "e2e-secret-access-key",
		},
	}
	s.must("creating the S3 credentials Secret", env.Client.Create(s.ctx, creds))
	return &bootstrapv1.EtcdSnapshotsS3{
		Bucket: e2eS3Bucket, Endpoint: e2eS3Endpoint, Folder: s.ns,
		CredentialsSecret: &bootstrapv1.SecretReference{Name: creds.Name},
	}
}

// waitEtcdSnapshots waits for the control plane to report a ready snapshot, then
// for a newer one: the simulator takes one every SnapshotInterval, and only the
// control plane's watch on the records brings it into the status.
func (s *scenario) waitEtcdSnapshots() {
	s.t.Helper()
	first := ""
	s.eventually("a ready etcd snapshot in the control plane's status", func(ctx context.Context) (bool, string, error) {
		name, state, err := s.lastEtcdSnapshot(ctx)
		first = name
		return name != "", state, err
	})
	s.eventually("a newer etcd snapshot in the control plane's status", func(ctx context.Context) (bool, string, error) {
		name, state, err := s.lastEtcdSnapshot(ctx)
		return name != "" && name != first, state, err
	})
}

// lastEtcdSnapshot is the snapshot the control plane reports, once its condition
// says it is ready to use.
func (s *scenario) lastEtcdSnapshot(ctx context.Context) (string, string, error) {
	kcp := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.objs.ControlPlane), kcp); err != nil {
		return "", "", err
	}
	c := conditions.Get(kcp, controlplanev1.EtcdSnapshotsAvailableCondition)
	last := kcp.Status.LastEtcdSnapshot
	state := fmt.Sprintf("condition %+v, lastEtcdSnapshot %+v", c, last)
	if c == nil || c.Status != metav1.ConditionTrue || last == nil || !last.ReadyToUse || last.CreationTime == nil {
		return "", state, nil
	}
	return last.Name, state, nil
}

// checkRestoreOnTheFirstServerOnly: of the servers' bootstrap data, exactly one
// restores the snapshot (the first server's, which also initialized the cluster);
// the simulator already refuses a joining server that would.
func (s *scenario) checkRestoreOnTheFirstServerOnly() {
	s.t.Helper()
	machines, err := s.serverMachines(s.ctx)
	s.must("listing servers", err)
	restoring := 0
	for _, m := range machines {
		if m.Spec.Bootstrap.DataSecretName == nil {
			s.t.Fatalf("server %s has no bootstrap data", m.Name)
		}
		data := &corev1.Secret{}
		s.must("reading bootstrap data", env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: *m.Spec.Bootstrap.DataSecretName}, data))
		value := string(data.Data["value"])
		if strings.Contains(value, "--cluster-reset-restore-path='etcd-snapshot-old-cluster-1700000000'") {
			restoring++
			if !strings.Contains(value, "cluster-init: true") {
				s.t.Errorf("server %s restores but does not initialize the cluster", m.Name)
			}
		}
		if strings.Contains(value, "e2e-secret-access-key") && !strings.Contains(value, "AWS_SECRET_ACCESS_KEY='e2e-secret-access-key'") {
			s.t.Errorf("server %s carries the S3 secret outside the environment file", m.Name)
		}
	}
	if restoring != 1 {
		s.t.Errorf("%d of %d servers restore the snapshot, want exactly the first", restoring, len(machines))
	}
}
