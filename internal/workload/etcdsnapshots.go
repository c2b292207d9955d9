package workload

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ETCDSnapshotFileKind is k3s's record of one etcd snapshot (cluster-scoped). k3s
// creates one per snapshot file on a server's disk and one per object in S3. Read
// as unstructured: capk3s does not depend on k3s's Go module for four fields.
var ETCDSnapshotFileKind = schema.GroupVersionKind{Group: "k3s.cattle.io", Version: "v1", Kind: "ETCDSnapshotFile"}

// EtcdSnapshot is what the control plane reports of one ETCDSnapshotFile.
type EtcdSnapshot struct {
	// Object is the ETCDSnapshotFile's own name.
	Object string
	// Name is spec.snapshotName, the name k3s lists and restores by.
	Name     string
	NodeName string
	Location string
	S3       bool
	// CreationTime is status.creationTime; nil while k3s has not set it.
	CreationTime *metav1.Time
	Size         *resource.Quantity
	ReadyToUse   bool
	// Error is status.error.message, k3s's words for a failed snapshot.
	Error string
}

// etcdSnapshotFile is the part of k3s's ETCDSnapshotFile that capk3s reads.
type etcdSnapshotFile struct {
	Spec struct {
		SnapshotName string          `json:"snapshotName"`
		NodeName     string          `json:"nodeName"`
		Location     string          `json:"location"`
		S3           *map[string]any `json:"s3,omitempty"`
	} `json:"spec"`
	Status struct {
		CreationTime *metav1.Time       `json:"creationTime,omitempty"`
		ReadyToUse   *bool              `json:"readyToUse,omitempty"`
		Size         *resource.Quantity `json:"size,omitempty"`
		Error        *struct {
			Message *string `json:"message,omitempty"`
		} `json:"error,omitempty"`
	} `json:"status"`
}

// LatestEtcdSnapshot is the newest snapshot k3s records on the workload cluster, by
// creation time (the object's own as a fallback while k3s has not set one), or nil
// when there is none. A workload cluster without k3s's ETCDSnapshotFile kind (k3s
// installs it with its first etcd server) has no snapshot yet, not an error.
func LatestEtcdSnapshot(ctx context.Context, reader client.Reader) (*EtcdSnapshot, error) {
	all, err := EtcdSnapshots(ctx, reader)
	if err != nil {
		return nil, err
	}
	var newest *EtcdSnapshot
	for i := range all {
		if newest == nil || Newer(&all[i], newest) {
			newest = &all[i]
		}
	}
	return newest, nil
}

// EtcdSnapshots are all the snapshots k3s records on the workload cluster, in no
// particular order; none (and no error) while k3s has not installed the kind.
func EtcdSnapshots(ctx context.Context, reader client.Reader) ([]EtcdSnapshot, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(ETCDSnapshotFileKind.GroupVersion().WithKind(ETCDSnapshotFileKind.Kind + "List"))
	if err := reader.List(ctx, list); err != nil {
		switch {
		case meta.IsNoMatchError(err), apierrors.IsNotFound(err):
			return nil, nil
		case errors.Is(err, clustercache.ErrClusterNotConnected):
			return nil, err
		}
		return nil, fmt.Errorf("listing the workload cluster's ETCDSnapshotFiles: %w", err)
	}
	out := make([]EtcdSnapshot, 0, len(list.Items))
	for i := range list.Items {
		item := &list.Items[i]
		var f etcdSnapshotFile
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &f); err != nil {
			// One malformed object must not hide the others.
			continue
		}
		s := EtcdSnapshot{
			Object: item.GetName(),
			Name:   f.Spec.SnapshotName, NodeName: f.Spec.NodeName, Location: f.Spec.Location,
			S3: f.Spec.S3 != nil, CreationTime: f.Status.CreationTime, Size: f.Status.Size,
			ReadyToUse: f.Status.ReadyToUse != nil && *f.Status.ReadyToUse,
		}
		if s.Name == "" {
			s.Name = item.GetName()
		}
		if s.CreationTime == nil {
			t := item.GetCreationTimestamp()
			s.CreationTime = &t
		}
		if e := f.Status.Error; e != nil && e.Message != nil {
			s.Error = *e.Message
		}
		out = append(out, s)
	}
	return out, nil
}

// Newer orders by creation time, then by name so that the choice is stable (k3s
// records a snapshot twice, locally and in S3, at the same time; the S3 copy wins,
// being the one that outlives the server).
func Newer(a, b *EtcdSnapshot) bool {
	if !a.CreationTime.Equal(b.CreationTime) {
		return b.CreationTime.Before(a.CreationTime)
	}
	if a.S3 != b.S3 {
		return a.S3
	}
	return a.Name > b.Name
}
