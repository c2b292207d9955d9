package v1beta2

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// KThreesEtcdSnapshotPhase is where one on-demand snapshot stands.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
type KThreesEtcdSnapshotPhase string

const (
	// EtcdSnapshotPending is a snapshot not requested from k3s yet.
	EtcdSnapshotPending KThreesEtcdSnapshotPhase = "Pending"
	// EtcdSnapshotRunning is a snapshot requested from k3s; the result is not known yet.
	EtcdSnapshotRunning KThreesEtcdSnapshotPhase = "Running"
	// EtcdSnapshotSucceeded says k3s took the snapshot; status.snapshot says where it is.
	EtcdSnapshotSucceeded KThreesEtcdSnapshotPhase = "Succeeded"
	// EtcdSnapshotFailed says no snapshot was taken, or k3s recorded it as failed; the
	// Ready condition's reason and status.error say why. Never retried: a new
	// object is a new attempt.
	EtcdSnapshotFailed KThreesEtcdSnapshotPhase = "Failed"
)

// EtcdSnapshotLocation says where an on-demand snapshot is kept.
// +kubebuilder:validation:Enum=S3;Local
type EtcdSnapshotLocation string

const (
	// EtcdSnapshotLocationS3 keeps the snapshot on the server's disk and uploads it
	// to the S3 bucket of the control plane's serverConfig.etcd.snapshots.s3.
	EtcdSnapshotLocationS3 EtcdSnapshotLocation = "S3"
	// EtcdSnapshotLocationLocal keeps it on the disk of the server that took it only.
	EtcdSnapshotLocationLocal EtcdSnapshotLocation = "Local"
)

// EtcdSnapshotRolloutLabel marks the snapshot that the control plane took before
// a rollout or an in-place update; its value names that rollout, so that one
// rollout makes one snapshot however often the manager restarts.
const EtcdSnapshotRolloutLabel = "controlplane.cluster.x-k8s.io/etcd-snapshot-before-rollout"

// KThreesEtcdSnapshotSpec names the cluster whose embedded etcd k3s snapshots. It
// is immutable: the object is one request.
type KThreesEtcdSnapshotSpec struct {
	// clusterName is the Cluster, in this namespace, whose KThreesControlPlane runs
	// embedded etcd.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ClusterName string `json:"clusterName"`

	// namePrefix is the start of k3s's snapshot name (k3s's etcd-snapshot-name,
	// "on-demand" by default). capk3s appends the first eight characters of this
	// object's UID, so that it can tell its snapshot from any other, and k3s appends
	// the node name and the time: "<namePrefix>-<uid8>-<node>-<unix time>".
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	NamePrefix string `json:"namePrefix,omitempty"`

	// location is where the snapshot is kept: S3 (on the server's disk and in the
	// bucket of kthreesConfigSpec.serverConfig.etcd.snapshots.s3) or Local (on the
	// disk of the server that took it). Unset: S3 when the control plane configures
	// S3, else Local. A snapshot on a server's disk is lost with that machine.
	// +optional
	Location EtcdSnapshotLocation `json:"location,omitempty"`
}

// EtcdSnapshotResult is the snapshot k3s took, as its ETCDSnapshotFile records say.
type EtcdSnapshotResult struct {
	// name is k3s's snapshot name, as `k3s etcd-snapshot list` and
	// etcd.restoreFrom take it.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// nodeName is the Node of the server that took it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName,omitempty"`

	// location is the file:// URL of the snapshot on that server.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Location string `json:"location,omitempty"`

	// s3Location is the s3:// URL of the uploaded copy, when there is one.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	S3Location string `json:"s3Location,omitempty"`

	// size of the snapshot.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// creationTime is when k3s took it.
	// +optional
	CreationTime *metav1.Time `json:"creationTime,omitempty"`

	// etcdSnapshotFiles are the names of k3s's ETCDSnapshotFile records of this
	// snapshot on the workload cluster (one on the node, one in S3).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:MaxLength=253
	ETCDSnapshotFiles []string `json:"etcdSnapshotFiles,omitempty"`
}

// KThreesEtcdSnapshotStatus is the progress and the result.
type KThreesEtcdSnapshotStatus struct {
	// phase is Pending, Running, Succeeded or Failed.
	// +optional
	Phase KThreesEtcdSnapshotPhase `json:"phase,omitempty"`

	// conditions: Ready is True once the snapshot is taken, False with the reason
	// while it is not (Pending, Running) or when it failed.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// requestedName is the name sent to k3s, written before the request: k3s's
	// snapshot of this object is the one whose name starts with it. A manager that
	// stops after the request finds its result by that name and never asks twice.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	RequestedName string `json:"requestedName,omitempty"`

	// startTime is when the request was sent to k3s.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the snapshot succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// snapshot is the result.
	// +optional
	Snapshot *EtcdSnapshotResult `json:"snapshot,omitempty"`

	// error is why the snapshot failed, in k3s's words where k3s gave any.
	// +optional
	// +kubebuilder:validation:MaxLength=10240
	Error string `json:"error,omitempty"`
}

// KThreesEtcdSnapshot is one on-demand snapshot of a cluster's embedded etcd,
// taken through k3s's supervisor API at the control plane endpoint. The Cluster
// owns it. Added by capk3s.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=kthreesetcdsnapshots,scope=Namespaced,categories=cluster-api,shortName=k3ssnap
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta2"
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".spec.clusterName"
// +kubebuilder:printcolumn:name="Phase",type="string",JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Snapshot",type="string",JSONPath=".status.snapshot.name"
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=".status.snapshot.nodeName"
// +kubebuilder:printcolumn:name="Size",type="string",JSONPath=".status.snapshot.size"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Reason",type="string",JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=10
// +kubebuilder:printcolumn:name="Message",type="string",JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=10
type KThreesEtcdSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec KThreesEtcdSnapshotSpec `json:"spec"`
	// +optional
	Status KThreesEtcdSnapshotStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions, for CAPI's conditions utilities.
func (s *KThreesEtcdSnapshot) GetConditions() []metav1.Condition { return s.Status.Conditions }

// SetConditions sets the conditions, for CAPI's conditions utilities.
func (s *KThreesEtcdSnapshot) SetConditions(c []metav1.Condition) { s.Status.Conditions = c }

// KThreesEtcdSnapshotList is a list of KThreesEtcdSnapshot.
// +kubebuilder:object:root=true
type KThreesEtcdSnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KThreesEtcdSnapshot `json:"items"`
}

// Reasons of a KThreesEtcdSnapshot's Ready condition.
const (
	// EtcdSnapshotReadyCondition is True once k3s took the snapshot.
	EtcdSnapshotReadyCondition = "Ready"

	EtcdSnapshotPendingReason = "Pending"
	EtcdSnapshotRunningReason = "Running"
	// EtcdSnapshotSucceededReason: k3s took the snapshot.
	EtcdSnapshotSucceededReason = "Succeeded"
	// EtcdSnapshotNotEmbeddedEtcdReason: the control plane uses an external
	// datastore; k3s has no etcd to snapshot.
	EtcdSnapshotNotEmbeddedEtcdReason = "NotEmbeddedEtcd"
	// EtcdSnapshotNotInitializedReason: the control plane is not initialized.
	EtcdSnapshotNotInitializedReason = "ControlPlaneNotInitialized"
	// EtcdSnapshotS3NotConfiguredReason: location S3 without S3 settings.
	EtcdSnapshotS3NotConfiguredReason = "S3NotConfigured"
	// EtcdSnapshotClusterNotFoundReason: no such Cluster or KThreesControlPlane.
	EtcdSnapshotClusterNotFoundReason = "ClusterNotFound"
	// EtcdSnapshotRejectedReason: k3s refused or failed the request (the message
	// has its answer).
	EtcdSnapshotRejectedReason = "Rejected"
	// EtcdSnapshotK3sFailedReason: k3s recorded the snapshot as failed.
	EtcdSnapshotK3sFailedReason = "SnapshotFailed"
	// EtcdSnapshotUnreachableReason: the supervisor could not be reached in time.
	EtcdSnapshotUnreachableReason = "Unreachable"
	// EtcdSnapshotLostReason: the request was sent, but no answer came and k3s
	// recorded no snapshot of that name in time (the manager stopped during the
	// request, or the request timed out).
	EtcdSnapshotLostReason = "ResultUnknown"
)

func init() {
	schemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &KThreesEtcdSnapshot{}, &KThreesEtcdSnapshotList{})
		return nil
	})
}

// EtcdSnapshotAttemptLabel numbers the attempts at the snapshot before one rollout.
const EtcdSnapshotAttemptLabel = "controlplane.cluster.x-k8s.io/etcd-snapshot-attempt"

// Reasons of a KThreesControlPlane's RollingOut condition while the snapshot
// before the rollout (spec.rolloutStrategy.etcdSnapshot) holds it.
const (
	// WaitingForEtcdSnapshotReason: the rollout waits for its KThreesEtcdSnapshot,
	// or for the next attempt after a failed one.
	WaitingForEtcdSnapshotReason = "WaitingForEtcdSnapshot"
	// EtcdSnapshotBeforeRolloutFailedReason: every attempt failed; the rollout
	// stops until the failed snapshots are deleted or the snapshot is disabled.
	EtcdSnapshotBeforeRolloutFailedReason = "EtcdSnapshotFailed"
)
