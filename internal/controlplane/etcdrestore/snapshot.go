package etcdrestore

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/restoreplan"
)

// snapshotKind is the on-demand snapshot kind (api/controlplane/v1beta2), read as
// unstructured: this controller needs three of its status fields, not its code.
const snapshotKind = "KThreesEtcdSnapshot"

// snapshot is what is known of the restore's snapshot: spec.snapshotName as it is, or
// the result of the KThreesEtcdSnapshot spec.snapshotRef names, once that succeeded
// and reached S3 (status.phase Succeeded, the snapshot's name at status.name or
// status.result.name, its location at status.location or status.result.location).
func snapshot(ctx context.Context, c client.Reader, restore *controlplanev1.KThreesEtcdRestore) (restoreplan.Snapshot, error) {
	if restore.Spec.SnapshotName != "" {
		return restoreplan.Snapshot{Name: restore.Spec.SnapshotName}, nil
	}
	ref := restore.Spec.SnapshotRef
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(controlplanev1.GroupVersion.WithKind(snapshotKind))
	err := c.Get(ctx, client.ObjectKey{Namespace: restore.Namespace, Name: ref}, u)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return restoreplan.Snapshot{Problem: fmt.Sprintf("%s %s does not exist", snapshotKind, ref)}, nil
	case err != nil:
		return restoreplan.Snapshot{}, fmt.Errorf("reading %s %s: %w", snapshotKind, ref, err)
	}
	return snapshotOf(u), nil
}

// snapshotOf reads a KThreesEtcdSnapshot's result.
func snapshotOf(u *unstructured.Unstructured) restoreplan.Snapshot {
	phase := field(u, "phase")
	switch phase {
	case "Succeeded":
	case "Failed":
		return restoreplan.Snapshot{Problem: fmt.Sprintf("%s %s failed: %s", snapshotKind, u.GetName(), field(u, "error", "message"))}
	default:
		return restoreplan.Snapshot{Wait: fmt.Sprintf("%s %s is %s", snapshotKind, u.GetName(), orUnknown(phase))}
	}
	name, location := field(u, "name"), field(u, "location")
	switch {
	case name == "":
		return restoreplan.Snapshot{Problem: fmt.Sprintf("%s %s succeeded without a snapshot name", snapshotKind, u.GetName())}
	case !strings.HasPrefix(location, "s3://"):
		return restoreplan.Snapshot{Problem: fmt.Sprintf("%s %s is at %q, not in S3: a new server cannot read it", snapshotKind, u.GetName(), location)}
	}
	return restoreplan.Snapshot{Name: name}
}

// field is the first of keys found in status or status.result, as a string.
func field(u *unstructured.Unstructured, keys ...string) string {
	for _, k := range keys {
		for _, path := range [][]string{{"status", k}, {"status", "result", k}} {
			if v, ok, _ := unstructured.NestedString(u.Object, path...); ok && v != "" {
				return v
			}
		}
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "not done yet"
	}
	return s
}
