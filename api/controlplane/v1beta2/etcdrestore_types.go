package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// KThreesEtcdRestoreSpec names the running cluster to bring back and the snapshot to
// bring it back to. It is immutable: a restore is one act, and a changed target
// half-way would leave servers from two snapshots.
// +kubebuilder:validation:XValidation:rule="has(self.snapshotName) != has(self.snapshotRef)",message="set exactly one of snapshotName and snapshotRef"
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: delete this restore and create another"
type KThreesEtcdRestoreSpec struct {
	// clusterName is the Cluster (in this namespace) whose control plane is restored.
	// Its KThreesControlPlane must run embedded etcd with snapshots.s3 set.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ClusterName string `json:"clusterName"`

	// snapshotName is the k3s name of a snapshot in the cluster's S3 bucket and folder
	// (as `k3s etcd-snapshot list` and status.lastEtcdSnapshot show it). S3 is the one
	// place a new server can read it from: a snapshot on an old server's disk is gone
	// with that server.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SnapshotName string `json:"snapshotName,omitempty"`

	// snapshotRef names a KThreesEtcdSnapshot (in this namespace) whose result, once it
	// succeeded and was uploaded to S3, is the snapshot to restore.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SnapshotRef string `json:"snapshotRef,omitempty"`
}

// EtcdRestorePhase is where a restore stands.
// +kubebuilder:validation:Enum=Pending;DeletingServers;RestoringFirstServer;JoiningServers;Succeeded;Failed;Refused
type EtcdRestorePhase string

// The phases of a restore, in order; Failed and Refused end it early.
const (
	// EtcdRestorePending: not started; the preconditions are checked.
	EtcdRestorePending EtcdRestorePhase = "Pending"
	// EtcdRestoreDeletingServers: the old servers are deleted; the workload API is down.
	EtcdRestoreDeletingServers EtcdRestorePhase = "DeletingServers"
	// EtcdRestoreRestoringFirstServer: one new server restores the snapshot.
	EtcdRestoreRestoringFirstServer EtcdRestorePhase = "RestoringFirstServer"
	// EtcdRestoreJoiningServers: the control plane joins the other servers.
	EtcdRestoreJoiningServers EtcdRestorePhase = "JoiningServers"
	// EtcdRestoreSucceeded: every server is Ready on the restored etcd.
	EtcdRestoreSucceeded EtcdRestorePhase = "Succeeded"
	// EtcdRestoreFailed: the restore stopped after it started; message says why.
	EtcdRestoreFailed EtcdRestorePhase = "Failed"
	// EtcdRestoreRefused: the restore never started (nothing was touched); message says why.
	EtcdRestoreRefused EtcdRestorePhase = "Refused"
)

// Finished says whether a restore has ended, for good or not.
func (p EtcdRestorePhase) Finished() bool {
	return p == EtcdRestoreSucceeded || p == EtcdRestoreFailed || p == EtcdRestoreRefused
}

// The conditions of a KThreesEtcdRestore: one per step, and Ready for the whole.
const (
	// EtcdRestoreReadyCondition is True once the restore succeeded, False with the
	// reason otherwise.
	EtcdRestoreReadyCondition = "Ready"
	// EtcdRestoreStartedCondition is True once the preconditions held and the restore
	// began (the point after which servers are deleted).
	EtcdRestoreStartedCondition = "Started"
	// EtcdRestoreServersDeletedCondition is True once no old server is left.
	EtcdRestoreServersDeletedCondition = "ServersDeleted"
	// EtcdRestoreFirstServerRestoredCondition is True once the new first server runs
	// on the restored etcd and its Node is back in the workload API.
	EtcdRestoreFirstServerRestoredCondition = "FirstServerRestored"
	// EtcdRestoreServersJoinedCondition is True once the control plane is back at its
	// replicas, all Ready, with a healthy etcd.
	EtcdRestoreServersJoinedCondition = "ServersJoined"
)

// Reasons of the restore conditions.
const (
	EtcdRestoreWaitingReason          = "Waiting"
	EtcdRestoreInProgressReason       = "InProgress"
	EtcdRestoreDoneReason             = "Done"
	EtcdRestoreRefusedReason          = "Refused"
	EtcdRestoreFailedReason           = "Failed"
	EtcdRestoreSnapshotNotReadyReason = "SnapshotNotReady"
)

// KThreesEtcdRestoreStatus is the restore's progress.
type KThreesEtcdRestoreStatus struct {
	// conditions are the steps (Started, ServersDeleted, FirstServerRestored,
	// ServersJoined) and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// phase is where the restore stands.
	// +optional
	Phase EtcdRestorePhase `json:"phase,omitempty"`

	// snapshotName is the S3 snapshot being restored, fixed when the restore started
	// (from spec.snapshotName or the referenced KThreesEtcdSnapshot).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SnapshotName string `json:"snapshotName,omitempty"`

	// safetySnapshot is the snapshot of the running cluster the restore took to S3
	// (the control plane's bucket and folder) right before it deleted anything: the
	// snapshot a new restore goes back to when this one fails. Empty when the
	// restore took none (it never left Pending, or it took over from a failed
	// restore, whose servers were already gone).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SafetySnapshot string `json:"safetySnapshot,omitempty"`

	// controlPlaneName is the KThreesControlPlane being restored.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ControlPlaneName string `json:"controlPlaneName,omitempty"`

	// firstServer is the Machine of the server that restores the snapshot.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	FirstServer string `json:"firstServer,omitempty"`

	// oldServerNodes are the Nodes the restore deleted in the workload cluster,
	// recorded before it deletes them. The restored etcd holds the Nodes of the
	// servers that ran when the snapshot was taken, NotReady for good: once every
	// server of the restored control plane is Ready, the restore deletes every Node
	// with a k3s server role (control-plane, or etcd on an etcd-only server) that no
	// current server Machine has. An agent's Node has no server role and is kept.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	OldServerNodes []string `json:"oldServerNodes,omitempty"`

	// startTime is when the restore started deleting servers.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the restore ended, for good or not.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// message says what the restore does or waits for now, or why it stopped.
	// +optional
	// +kubebuilder:validation:MaxLength=10240
	Message string `json:"message,omitempty"`

	// observedGeneration is the generation this status was written for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// KThreesEtcdRestore restores a running cluster's control plane to an etcd snapshot
// in S3 by re-provisioning its servers: the old servers are deleted, a new first
// server restores the snapshot (k3s cluster-reset), the others join it. Agents are
// kept. Added by capk3s; docs/etcd-snapshots.md is the guide.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kthreesetcdrestores,scope=Namespaced,categories=cluster-api,shortName=k3srestore
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta2"
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".spec.clusterName",description="Cluster restored"
// +kubebuilder:printcolumn:name="Snapshot",type="string",JSONPath=".status.snapshotName",description="Snapshot restored"
// +kubebuilder:printcolumn:name="Phase",type="string",JSONPath=".status.phase",description="Where the restore stands"
// +kubebuilder:printcolumn:name="Message",type="string",JSONPath=".status.message",description="What it does or why it stopped",priority=10
// +kubebuilder:printcolumn:name="Started",type="date",JSONPath=".status.startTime"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type KThreesEtcdRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec KThreesEtcdRestoreSpec `json:"spec"`
	// +optional
	Status KThreesEtcdRestoreStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the restore's conditions (CAPI's v1beta2 conditions helpers).
func (r *KThreesEtcdRestore) GetConditions() []metav1.Condition { return r.Status.Conditions }

// SetConditions sets the restore's conditions.
func (r *KThreesEtcdRestore) SetConditions(c []metav1.Condition) { r.Status.Conditions = c }

// KThreesEtcdRestoreList is a list of KThreesEtcdRestores.
// +kubebuilder:object:root=true
type KThreesEtcdRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KThreesEtcdRestore `json:"items"`
}

// EtcdRestoreAnnotation marks the server Machine, KThreesConfig and infrastructure
// machine that a restore created to restore its snapshot; the value is the
// KThreesEtcdRestore's name. The bootstrap provider renders such a config as the
// cluster's first server (with cluster-reset) although the cluster was initialized
// long ago.
const EtcdRestoreAnnotation = "controlplane.cluster.x-k8s.io/etcd-restore"

// EtcdRestoreLockAnnotation on a KThreesControlPlane names the KThreesEtcdRestore
// (as "<name>/<uid>") that holds the control plane: written with an optimistic
// lock before a restore leaves Pending, so that of two restores of one cluster
// exactly one may delete servers. The lock is free when the annotation is absent or
// names a restore that is gone, Succeeded or Refused; a Failed restore keeps it
// until a new restore takes it over.
const EtcdRestoreLockAnnotation = "controlplane.cluster.x-k8s.io/etcd-restore-lock"

// EtcdRestoreFinalizer keeps a restore that holds the control plane's lock (after
// it left Pending) until it ends or another restore takes the lock over: without it
// a restore deleted half-way would leave the control plane to join servers to a
// cluster that has none.
const EtcdRestoreFinalizer = "kthreesetcdrestore.controlplane.cluster.x-k8s.io"

// Registered by its own init, so that kinds added beside it do not touch one list.
func init() {
	schemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &KThreesEtcdRestore{}, &KThreesEtcdRestoreList{})
		return nil
	})
}
