package etcdrestore

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/restoreplan"
)

// snapshotKind names the on-demand snapshot kind in messages.
const snapshotKind = "KThreesEtcdSnapshot"

// snapshot is what is known of the restore's snapshot: spec.snapshotName as it is, or
// the result of the KThreesEtcdSnapshot spec.snapshotRef names, once that succeeded
// and its copy reached S3, the only place a re-provisioned server can read it from.
func snapshot(ctx context.Context, c client.Reader, restore *controlplanev1.KThreesEtcdRestore) (restoreplan.Snapshot, error) {
	if restore.Spec.SnapshotName != "" {
		return restoreplan.Snapshot{Name: restore.Spec.SnapshotName}, nil
	}
	ref := restore.Spec.SnapshotRef
	snap := &controlplanev1.KThreesEtcdSnapshot{}
	err := c.Get(ctx, client.ObjectKey{Namespace: restore.Namespace, Name: ref}, snap)
	switch {
	case apierrors.IsNotFound(err):
		return restoreplan.Snapshot{Problem: fmt.Sprintf("%s %s does not exist", snapshotKind, ref)}, nil
	case err != nil:
		return restoreplan.Snapshot{}, fmt.Errorf("reading %s %s: %w", snapshotKind, ref, err)
	case snap.Spec.ClusterName != restore.Spec.ClusterName:
		return restoreplan.Snapshot{Problem: fmt.Sprintf("%s %s is a snapshot of Cluster %s, not of Cluster %s",
			snapshotKind, ref, snap.Spec.ClusterName, restore.Spec.ClusterName)}, nil
	}
	return snapshotOf(snap), nil
}

// snapshotOf reads a KThreesEtcdSnapshot's result.
func snapshotOf(snap *controlplanev1.KThreesEtcdSnapshot) restoreplan.Snapshot {
	st := snap.Status
	switch st.Phase {
	case controlplanev1.EtcdSnapshotSucceeded:
	case controlplanev1.EtcdSnapshotFailed:
		return restoreplan.Snapshot{Problem: fmt.Sprintf("%s %s failed: %s", snapshotKind, snap.Name, st.Error)}
	default:
		return restoreplan.Snapshot{Wait: fmt.Sprintf("%s %s is %s", snapshotKind, snap.Name, orUnknown(string(st.Phase)))}
	}
	switch {
	case st.Snapshot == nil || st.Snapshot.Name == "":
		return restoreplan.Snapshot{Problem: fmt.Sprintf("%s %s succeeded without a snapshot name", snapshotKind, snap.Name)}
	case !strings.HasPrefix(st.Snapshot.S3Location, "s3://"):
		return restoreplan.Snapshot{Problem: fmt.Sprintf("%s %s is only at %q, not in S3: a new server cannot read it", snapshotKind, snap.Name, st.Snapshot.Location)}
	}
	out := restoreplan.Snapshot{Name: st.Snapshot.Name}
	if st.CompletionTime != nil {
		out.KnownSince = st.CompletionTime.Time
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "not done yet"
	}
	return s
}
