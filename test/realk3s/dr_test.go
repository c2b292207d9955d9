package realk3s

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// withSnapshotsToS3 gives the control plane etcd snapshots to the layer's S3 gateway,
// in a folder of the scenario's own (which k3s does not create on the servers:
// capk3s's bootstrap data does), with keys from a Secret.
func (s *scenario) withSnapshotsToS3() {
	s.t.Helper()
	creds := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "etcd-backup-s3"},
		StringData: map[string]string{bootstrapv1.EtcdS3AccessKeyIDKey: s3AccessKey, bootstrapv1.EtcdS3SecretAccessKeyKey: s3SecretKey},
	}
	s.must("creating the S3 credentials Secret", env.Client.Create(s.ctx, creds))
	s.c.controlPlane.Spec.KThreesConfigSpec.ServerConfig.Etcd = &bootstrapv1.Etcd{
		Snapshots: &bootstrapv1.EtcdSnapshots{
			Directory: "/var/lib/etcd-snapshots",
			S3: &bootstrapv1.EtcdSnapshotsS3{
				Bucket: s3Bucket, Endpoint: s3.endpoint, Folder: s.ns, Insecure: true,
				CredentialsSecret: &bootstrapv1.SecretReference{Name: creds.Name},
			},
		},
	}
}

// writeMarker creates a ConfigMap in the workload cluster.
func (s *scenario) writeMarker(name string) {
	s.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: name}, Data: map[string]string{"written": "realk3s"}}
	s.must("writing marker "+name, s.wc.Create(s.ctx, cm))
}

// markerExists says whether the marker ConfigMap is in the workload cluster.
func (s *scenario) markerExists(ctx context.Context, name string) (bool, error) {
	err := s.wc.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: name}, &corev1.ConfigMap{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// snapshotOnDemand takes a snapshot through a KThreesEtcdSnapshot and checks that
// real k3s put it in the bucket, under the scenario's folder.
func (s *scenario) snapshotOnDemand(name string) *controlplanev1.KThreesEtcdSnapshot {
	s.t.Helper()
	snap := &controlplanev1.KThreesEtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name},
		Spec:       controlplanev1.KThreesEtcdSnapshotSpec{ClusterName: s.key.Name},
	}
	s.must("creating the KThreesEtcdSnapshot", env.Client.Create(s.ctx, snap))
	start := time.Now()
	eventually(s.t, 5*time.Minute, "the on-demand snapshot to succeed", func(ctx context.Context) error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(snap), snap); err != nil {
			return err
		}
		switch snap.Status.Phase {
		case controlplanev1.EtcdSnapshotSucceeded:
			return nil
		case controlplanev1.EtcdSnapshotFailed:
			return fmt.Errorf("snapshot failed: %s", snap.Status.Error)
		}
		return fmt.Errorf("phase %q, conditions %+v", snap.Status.Phase, snap.Status.Conditions)
	})
	res := snap.Status.Snapshot
	if res == nil {
		s.t.Fatalf("snapshot %s succeeded without a result: %+v", snap.Name, snap.Status)
	}
	key := s.ns + "/" + res.Name
	if want := "s3://" + s3Bucket + "/" + key; res.S3Location != want {
		s.t.Errorf("snapshot %s: s3Location %q, want %q", snap.Name, res.S3Location, want)
	}
	objs, err := s3.objects(s.ctx, s.ns)
	s.must("listing the bucket", err)
	if !slices.Contains(objs, key) {
		s.t.Errorf("snapshot %s: %s is not in the bucket: %v", snap.Name, key, objs)
	}
	s.t.Logf("on-demand snapshot %s (%s on %s) in S3 after %s", snap.Name, res.Name, res.NodeName, time.Since(start).Round(time.Second))
	return snap
}

// restoreOfAMissingSnapshotRefused: k3s's own list, asked with the control plane's S3
// settings, does not show the snapshot, so the restore is refused and every server
// kept.
func (s *scenario) restoreOfAMissingSnapshotRefused() {
	s.t.Helper()
	servers := s.machineUIDs(true)
	missing := &controlplanev1.KThreesEtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "restore-missing"},
		Spec:       controlplanev1.KThreesEtcdRestoreSpec{ClusterName: s.key.Name, SnapshotName: "etcd-snapshot-missing-1700000000"},
	}
	s.must("creating a restore of a missing snapshot", env.Client.Create(s.ctx, missing))
	eventually(s.t, 3*time.Minute, "the restore of a missing snapshot refused", func(ctx context.Context) error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(missing), missing); err != nil {
			return err
		}
		if missing.Status.Phase != controlplanev1.EtcdRestoreRefused {
			return fmt.Errorf("phase %s: %s", missing.Status.Phase, missing.Status.Message)
		}
		return nil
	})
	if now := s.machineUIDs(true); !now.Equal(servers) {
		s.t.Errorf("servers after the refused restore: %v, want %v kept", now.UnsortedList(), servers.UnsortedList())
	}
	s.t.Logf("restore of a missing snapshot refused: %s", missing.Status.Message)
}

// restoreTo restores the cluster to a snapshot and checks the markers and that no
// agent was replaced.
func (s *scenario) restoreTo(snap *controlplanev1.KThreesEtcdSnapshot, before, after string) {
	s.t.Helper()
	agents := s.machineUIDs(false)
	restore := &controlplanev1.KThreesEtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "restore-" + snap.Name},
		Spec:       controlplanev1.KThreesEtcdRestoreSpec{ClusterName: s.key.Name, SnapshotRef: snap.Name},
	}
	start := time.Now()
	s.must("creating the KThreesEtcdRestore", env.Client.Create(s.ctx, restore))
	eventually(s.t, 25*time.Minute, "the restore to succeed", func(ctx context.Context) error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(restore), restore); err != nil {
			return err
		}
		switch restore.Status.Phase {
		case controlplanev1.EtcdRestoreSucceeded:
			return nil
		case controlplanev1.EtcdRestoreFailed, controlplanev1.EtcdRestoreRefused:
			s.t.Fatalf("restore ended %s: %s", restore.Status.Phase, restore.Status.Message)
		}
		return fmt.Errorf("phase %s: %s", restore.Status.Phase, restore.Status.Message)
	})
	s.t.Logf("restore succeeded in %s", time.Since(start).Round(time.Second))
	clusterAvailable(s.t, s.key, 10*time.Minute)
	eventually(s.t, 5*time.Minute, "marker "+before+" back and "+after+" gone", func(ctx context.Context) error {
		hasBefore, err := s.markerExists(ctx, before)
		if err != nil {
			return err
		}
		hasAfter, err := s.markerExists(ctx, after)
		if err != nil {
			return err
		}
		if !hasBefore || hasAfter {
			return fmt.Errorf("%s there: %v, %s there: %v", before, hasBefore, after, hasAfter)
		}
		return nil
	})
	nodesReady(s.t, s.wc, len(s.machines(true))+len(s.machines(false)))
	if now := s.machineUIDs(false); !now.Equal(agents) {
		s.t.Errorf("agents after the restore: %v, want %v, none replaced", now.UnsortedList(), agents.UnsortedList())
	}
}
