package etcdrestore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/restoreplan"
	"github.com/capk3s/capk3s/internal/etcdsnapshot"
	"github.com/capk3s/capk3s/internal/k3s/supervisor"
	"github.com/capk3s/capk3s/internal/token"
)

// proofTimeout bounds one snapshot list: k3s checks the bucket and lists the
// folder, each within the S3 timeout, but a restore waiting in Pending must not hold
// a worker for long; an answer that does not come in time is asked again.
const proofTimeout = 90 * time.Second

// safetyPrefix is the name the restore's safety snapshot is taken under: k3s
// appends the node and the time. The UID makes it this restore's alone, so that a
// pass that finds it in the list knows it took it.
func safetyPrefix(restore *controlplanev1.KThreesEtcdRestore) string {
	uid := string(restore.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return "pre-restore-" + uid
}

// s3Target is where the control plane's snapshots are and its token's hash.
func s3Target(ctx context.Context, c client.Reader, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) (restoreplan.S3Target, error) {
	var t restoreplan.S3Target
	if etcd := kcp.Spec.KThreesConfigSpec.ServerConfig.Etcd; etcd != nil && etcd.Snapshots != nil && etcd.Snapshots.S3 != nil {
		t.Bucket, t.Folder = etcd.Snapshots.S3.Bucket, etcd.Snapshots.S3.Folder
	}
	tok, found, err := token.Lookup(ctx, c, cluster)
	if err != nil {
		return t, fmt.Errorf("reading the join token: %w", err)
	}
	if found {
		t.TokenHash = supervisor.TokenHash(tok.Server)
	}
	return t, nil
}

// prove asks the cluster's k3s supervisor for its snapshot list with the control
// plane's S3 settings and credentials: the answer shows the objects in the folder
// as k3s reads them (the same call a new server's restore depends on), and a 400
// says those credentials cannot read the bucket.
func (r *Reconciler) prove(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) restoreplan.Proof {
	items, err := r.list(ctx, cluster, kcp)
	var se *supervisor.StatusError
	switch {
	case errors.As(err, &se):
		return restoreplan.Proof{Refused: se.Error()}
	case err != nil:
		return restoreplan.Proof{Unreachable: err.Error()}
	}
	out := restoreplan.Proof{}
	for _, it := range items {
		l := restoreplan.Listed{Name: it.Spec.SnapshotName, Location: it.Spec.Location,
			Ready: it.Status.ReadyToUse != nil && *it.Status.ReadyToUse, TokenHash: it.Metadata.Annotations[supervisor.TokenHashAnnotation]}
		if e := it.Status.Error; e != nil && e.Message != nil {
			l.Error = *e.Message
		}
		out.Items = append(out.Items, l)
	}
	return out
}

func (r *Reconciler) supervisorCall(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) (*supervisor.Client, *supervisor.S3, error) {
	c, err := etcdsnapshot.SupervisorClient(ctx, r.APIReader, cluster)
	if err != nil {
		return nil, nil, err
	}
	s3, err := etcdsnapshot.S3Block(ctx, r.APIReader, kcp)
	if err != nil {
		return nil, nil, err
	}
	return c, s3, nil
}

func (r *Reconciler) list(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) ([]supervisor.ListedSnapshot, error) {
	c, s3, err := r.supervisorCall(ctx, cluster, kcp)
	if err != nil {
		return nil, err
	}
	c.Timeout = proofTimeout
	return c.List(ctx, s3)
}

// takeLock writes the control plane's restore lock for the restore, with an
// optimistic lock on the control plane read this pass: of two restores that both
// found the lock free, one write conflicts, and that restore's next pass finds the
// other holding it. The finalizer goes first, so that a restore holding the lock is
// never deleted unnoticed.
func (r *Reconciler) takeLock(ctx context.Context, restore *controlplanev1.KThreesEtcdRestore, kcp *controlplanev1.KThreesControlPlane, takeover bool) error {
	if !slices.Contains(restore.Finalizers, controlplanev1.EtcdRestoreFinalizer) {
		before := restore.DeepCopy()
		restore.Finalizers = append(restore.Finalizers, controlplanev1.EtcdRestoreFinalizer)
		if err := r.Client.Patch(ctx, restore, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("adding the restore's finalizer: %w", err)
		}
	}
	before := kcp.DeepCopy()
	if kcp.Annotations == nil {
		kcp.Annotations = map[string]string{}
	}
	value := restoreplan.LockValue(restore)
	if takeover {
		value = restoreplan.TakeoverLockValue(restore)
	}
	kcp.Annotations[controlplanev1.EtcdRestoreLockAnnotation] = value
	return r.Client.Patch(ctx, kcp, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// lockOf resolves the control plane's restore lock against the namespace's restores.
func (r *Reconciler) lockOf(ctx context.Context, kcp *controlplanev1.KThreesControlPlane) (restoreplan.Lock, error) {
	lock := kcp.Annotations[controlplanev1.EtcdRestoreLockAnnotation]
	if lock == "" {
		return restoreplan.Lock{}, nil
	}
	restores := &controlplanev1.KThreesEtcdRestoreList{}
	if err := r.APIReader.List(ctx, restores, client.InNamespace(kcp.Namespace)); err != nil {
		return restoreplan.Lock{}, fmt.Errorf("listing KThreesEtcdRestores: %w", err)
	}
	return restoreplan.LockHolder(restores.Items, lock), nil
}

// endpointServer is the server Machine whose own address is the Cluster's
// controlPlaneEndpoint host, "" when none's is.
func endpointServer(cluster *clusterv1.Cluster, machines map[string]*clusterv1.Machine) string {
	host := cluster.Spec.ControlPlaneEndpoint.Host
	if host == "" {
		return ""
	}
	for _, m := range machines {
		for _, a := range m.Status.Addresses {
			if a.Address == host {
				return m.Name
			}
		}
	}
	return ""
}
