package v1beta2

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LastEtcdSnapshotStatus is the newest etcd snapshot that k3s reports on the
// workload cluster (its ETCDSnapshotFile objects), ready to use or not. Set only
// while kthreesConfigSpec.serverConfig.etcd.snapshots is set. Added by capk3s.
type LastEtcdSnapshotStatus struct {
	// name is the snapshot's name, as `k3s etcd-snapshot list` and
	// etcd.restoreFrom take it.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// nodeName is the Node of the server that took it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName,omitempty"`

	// location is where the snapshot is: a file:// URL on that server, or an s3:// URL.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Location string `json:"location,omitempty"`

	// s3 is true when the snapshot is stored in S3.
	// +optional
	S3 bool `json:"s3,omitempty"`

	// creationTime is when k3s took it.
	// +optional
	CreationTime *metav1.Time `json:"creationTime,omitempty"`

	// size of the snapshot.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// readyToUse is k3s's word on whether the snapshot can be restored.
	// +optional
	ReadyToUse bool `json:"readyToUse,omitempty"`
}

// EtcdSnapshotsSummary counts k3s's ETCDSnapshotFile records of a cluster and names
// the newest copy in S3, the one a restore by re-provisioning can use (a copy on a
// server's disk goes with that machine). Added by capk3s.
type EtcdSnapshotsSummary struct {
	// count is how many snapshot records k3s keeps (on the servers' disks and in S3).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Count int32 `json:"count,omitempty"`

	// readyCount is how many of them k3s says can be restored.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ReadyCount int32 `json:"readyCount,omitempty"`

	// lastS3 is the newest snapshot stored in S3, ready to use or not.
	// +optional
	LastS3 *LastEtcdSnapshotStatus `json:"lastS3,omitempty"`
}
