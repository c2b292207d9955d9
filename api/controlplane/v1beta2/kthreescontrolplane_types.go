package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// KThreesControlPlaneFinalizer holds a KThreesControlPlane until its machines are gone.
const KThreesControlPlaneFinalizer = "kthrees.controlplane.cluster.x-k8s.io"

// KThreesControlPlaneSpec is the desired control plane: how many k3s servers, which
// version, and how their machines are shaped.
// +kubebuilder:validation:XValidation:rule="has(self.machineTemplate.spec) || has(self.machineTemplate.infrastructureRef)",message="spec.machineTemplate.spec.infrastructureRef is required"
type KThreesControlPlaneSpec struct {
	// replicas is the number of servers (default 1). With embedded etcd it must be odd,
	// so that etcd keeps a quorum.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Replicas *int32 `json:"replicas,omitempty"`

	// version is the k3s version of the servers, e.g. "v1.36.3+k3s1".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]*)?$`
	Version string `json:"version"`

	// machineTemplate shapes the servers' Machines.
	// +required
	MachineTemplate KThreesControlPlaneMachineTemplate `json:"machineTemplate"`

	// kthreesConfigSpec configures k3s on every server.
	// +optional
	KThreesConfigSpec bootstrapv1.KThreesConfigSpec `json:"kthreesConfigSpec,omitempty,omitzero"`

	// rolloutAfter replaces every server created before this time, even without a spec change.
	// +optional
	RolloutAfter *metav1.Time `json:"rolloutAfter,omitempty"`

	// rollout holds the Cluster API contract's rollout settings; a ClusterClass
	// topology sets them here.
	// +optional
	Rollout ControlPlaneRolloutSpec `json:"rollout,omitempty,omitzero"`

	// rolloutStrategy says how outdated servers are replaced.
	// +optional
	RolloutStrategy *RolloutStrategy `json:"rolloutStrategy,omitempty"`

	// remediationStrategy says how servers that a MachineHealthCheck marked unhealthy
	// are replaced.
	// +optional
	RemediationStrategy *RemediationStrategy `json:"remediationStrategy,omitempty"`

	// machineNaming says how new server Machines are named.
	// +optional
	MachineNaming MachineNamingSpec `json:"machineNaming,omitempty,omitzero"`

	// inPlaceUpdates says whether outdated servers may be updated in place (IfPossible,
	// the default) or are always replaced (Never). See InPlaceUpdatePolicy.
	// +optional
	InPlaceUpdates InPlaceUpdatePolicy `json:"inPlaceUpdates,omitempty"`

	// registrationMethod says how joining servers and agents find the cluster:
	// ControlPlaneEndpoint (the default: the Cluster's spec.controlPlaneEndpoint, a load
	// balancer or virtual IP), InternalAddress or ExternalAddress (the address of one
	// ready server, of that type, from its Machine's status.addresses; for sites with
	// no load balancer). The chosen server is published in status.registration and
	// chosen again when it goes away. See RegistrationMethod.
	// +optional
	RegistrationMethod RegistrationMethod `json:"registrationMethod,omitempty"`

	// caCertificateValidityPeriodDays is the lifetime, in days, of the cluster CAs
	// capk3s generates for a new cluster (3650 when not set, as before). It cannot be
	// changed: the CAs are made once, before the first server, and never again. CAs
	// that exist (a running cluster, a user's own) are never touched. Added by capk3s,
	// as KCP's kubeadmConfigSpec.clusterConfiguration.caCertificateValidityPeriodDays.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=36500
	CACertificateValidityPeriodDays int32 `json:"caCertificateValidityPeriodDays,omitempty"`
}

// KThreesControlPlaneMachineTemplate shapes the control plane's Machines. The spec
// block is the Cluster API v1beta2 contract's shape; the fields next to it are
// cluster-api-k3s's older shape, kept so that its manifests are not silently pruned.
type KThreesControlPlaneMachineTemplate struct {
	// metadata is given to each Machine (and propagated to existing ones).
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec is the Machines' spec on the v1beta2 contract.
	// +optional
	Spec KThreesControlPlaneMachineTemplateSpec `json:"spec,omitempty,omitzero"`

	// infrastructureRef is cluster-api-k3s's reference to the infrastructure template.
	//
	// Deprecated: use spec.infrastructureRef. It stays in the schema so that manifests
	// written for cluster-api-k3s are not pruned silently; moving it to
	// spec.infrastructureRef is the job of the defaulting webhook, which removes it
	// once moved unless it carries what spec.infrastructureRef cannot hold (uid,
	// resourceVersion, fieldPath): then it stays, and must agree with spec.infrastructureRef.
	// +optional
	DeprecatedInfrastructureRef *DeprecatedObjectReference `json:"infrastructureRef,omitempty"`

	// nodeDrainTimeout is cluster-api-k3s's drain timeout.
	//
	// Deprecated: use spec.deletion.nodeDrainTimeoutSeconds.
	// +optional
	DeprecatedNodeDrainTimeout *metav1.Duration `json:"nodeDrainTimeout,omitempty"`

	// nodeVolumeDetachTimeout is cluster-api-k3s's volume detach timeout.
	//
	// Deprecated: use spec.deletion.nodeVolumeDetachTimeoutSeconds.
	// +optional
	DeprecatedNodeVolumeDetachTimeout *metav1.Duration `json:"nodeVolumeDetachTimeout,omitempty"`

	// nodeDeletionTimeout is cluster-api-k3s's node deletion timeout.
	//
	// Deprecated: use spec.deletion.nodeDeletionTimeoutSeconds.
	// +optional
	DeprecatedNodeDeletionTimeout *metav1.Duration `json:"nodeDeletionTimeout,omitempty"`
}

// DeprecatedObjectReference is the apiVersion-based reference that cluster-api-k3s
// used for infrastructure templates, with every field of the core ObjectReference it
// was, so that none of them is pruned or refused.
type DeprecatedObjectReference struct {
	// apiVersion of the referent.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// kind of the referent.
	// +optional
	Kind string `json:"kind,omitempty"`
	// name of the referent.
	// +optional
	Name string `json:"name,omitempty"`
	// namespace of the referent; must be the control plane's own.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// uid of the referent. Ignored: a v1beta2 reference names a template by group,
	// kind and name only, and the template is found by them.
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// resourceVersion of the referent. Ignored: Cluster API always reads a template
	// as it is now.
	// +optional
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// fieldPath points into the referent. Ignored: a machine template is always
	// referred to as a whole.
	// +optional
	FieldPath string `json:"fieldPath,omitempty"`
}

// KThreesControlPlaneMachineTemplateSpec is the contract's machineTemplate.spec.
type KThreesControlPlaneMachineTemplateSpec struct {
	// infrastructureRef names the infrastructure machine template servers are cloned from.
	// +required
	InfrastructureRef clusterv1.ContractVersionedObjectReference `json:"infrastructureRef,omitempty,omitzero"`

	// readinessGates are extra conditions that each Machine's Ready condition waits for.
	// +optional
	// +listType=map
	// +listMapKey=conditionType
	// +kubebuilder:validation:MaxItems=32
	ReadinessGates []clusterv1.MachineReadinessGate `json:"readinessGates,omitempty"`

	// deletion holds the timeouts used when a server's Machine is deleted.
	// +optional
	Deletion MachineDeletionSpec `json:"deletion,omitempty,omitzero"`

	// minReadySeconds is how long a server's Machine must be Ready before it counts as
	// Available (default 0). It is set on existing Machines in place, without a rollout.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`

	// taints are the Node taints that Cluster API's Machine controller keeps on each
	// server's Node. They are set on existing Machines in place, without a rollout.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +listMapKey=effect
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Taints []clusterv1.MachineTaint `json:"taints,omitempty"`
}

// MachineDeletionSpec holds the timeouts that apply when a server's Machine is deleted;
// they are propagated to existing Machines without a rollout.
// +kubebuilder:validation:MinProperties=1
type MachineDeletionSpec struct {
	// nodeDrainTimeoutSeconds bounds the time spent draining the node; unset or 0 means no limit.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NodeDrainTimeoutSeconds *int32 `json:"nodeDrainTimeoutSeconds,omitempty"`

	// nodeVolumeDetachTimeoutSeconds bounds the wait for volumes to detach; unset or 0 means no limit.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NodeVolumeDetachTimeoutSeconds *int32 `json:"nodeVolumeDetachTimeoutSeconds,omitempty"`

	// nodeDeletionTimeoutSeconds bounds the attempts to delete the Node; 0 retries forever.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NodeDeletionTimeoutSeconds *int32 `json:"nodeDeletionTimeoutSeconds,omitempty"`
}

// ControlPlaneRolloutSpec is the contract's spec.rollout.
// +kubebuilder:validation:MinProperties=1
type ControlPlaneRolloutSpec struct {
	// after replaces every server created before this time, even without a spec
	// change, as rolloutAfter does (cluster-api-k3s's name for it). When both are set,
	// each one replaces the servers created before it, once it has passed.
	// +optional
	After metav1.Time `json:"after,omitempty,omitzero"`

	// before renews servers ahead of an event, as the contract's rollout.before:
	// certificatesExpiryDays renews the k3s certificates of the servers (and, with
	// the in-place path, of the agents) whose certificates expire sooner.
	// +optional
	Before ControlPlaneRolloutBeforeSpec `json:"before,omitempty,omitzero"`
}

// Bounds of rollout.before.certificatesExpiryDays. k3s renews at start only the leaf
// certificates that expire within 120 days (CertificateRenewDays, pkg/daemons/config
// in k3s v1.34-v1.36), and reports only those: a window beyond it would restart a
// node that renews nothing. The maximum keeps 10 days of that window for clocks that
// differ between the management cluster and the nodes, and for the node's report to
// arrive; the minimum is KCP's.
const (
	MinCertificatesExpiryDays = 7
	MaxCertificatesExpiryDays = 110
)

// ControlPlaneRolloutBeforeSpec is the contract's spec.rollout.before.
// +kubebuilder:validation:MinProperties=1
type ControlPlaneRolloutBeforeSpec struct {
	// certificatesExpiryDays renews a server whose k3s certificates expire within
	// this many days (the Machine's status.certificatesExpiryDate). Where in-place
	// updates are enabled and the workload cluster runs the system-upgrade-controller,
	// k3s is restarted on the node, one at a time, which renews them (agents too);
	// otherwise the server is replaced, as KCP does. Between 7 and 110: k3s renews
	// only certificates that expire within 120 days, and 10 days are kept for clock
	// differences. Unset, nothing is renewed.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self >= 7 && self <= 110",message="must be between 7 and 110 days: k3s renews at restart only certificates that expire within 120 days, and 10 days are kept for clock differences between the management cluster and the nodes"
	CertificatesExpiryDays int32 `json:"certificatesExpiryDays,omitempty"`
}

// RolloutStrategyType names a rollout strategy.
// +kubebuilder:validation:Enum=RollingUpdate
type RolloutStrategyType string

// RollingUpdateStrategyType replaces servers one at a time.
const RollingUpdateStrategyType RolloutStrategyType = "RollingUpdate"

// RolloutStrategy says how outdated servers are replaced.
type RolloutStrategy struct {
	// type of the rollout; only RollingUpdate exists.
	// +optional
	Type RolloutStrategyType `json:"type,omitempty"`

	// rollingUpdate tunes the RollingUpdate strategy.
	// +optional
	RollingUpdate *RollingUpdate `json:"rollingUpdate,omitempty"`

	// etcdSnapshot: Enabled (the default) takes an etcd snapshot (a
	// KThreesEtcdSnapshot) before the first server of a rollout or an in-place
	// update is touched, and holds the rollout until it succeeds; Disabled rolls out
	// without one. Only for embedded etcd. Added by capk3s.
	// +optional
	EtcdSnapshot EtcdSnapshotBeforeRollout `json:"etcdSnapshot,omitempty"`
}

// EtcdSnapshotBeforeRollout turns the snapshot before a rollout on or off.
// +kubebuilder:validation:Enum=Enabled;Disabled
type EtcdSnapshotBeforeRollout string

const (
	// EtcdSnapshotBeforeRolloutEnabled takes a snapshot before each rollout (the default).
	EtcdSnapshotBeforeRolloutEnabled EtcdSnapshotBeforeRollout = "Enabled"
	// EtcdSnapshotBeforeRolloutDisabled rolls out without a snapshot.
	EtcdSnapshotBeforeRolloutDisabled EtcdSnapshotBeforeRollout = "Disabled"
)

// RollingUpdate tunes a rolling replacement of servers.
type RollingUpdate struct {
	// maxSurge is how many servers may exist above replicas during a rollout: 1 (default,
	// create the new server first) or 0 (remove an old one first, for infrastructure
	// without spare capacity; needs at least 3 servers to keep etcd's quorum).
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="self == 0 || self == 1 || self == '0' || self == '1'",message="maxSurge must be 0 or 1"
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
}

// RemediationStrategy says how unhealthy servers are replaced.
type RemediationStrategy struct {
	// maxRetry bounds how often the replacement of one unhealthy server is itself
	// replaced; unset means no bound.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxRetry *int32 `json:"maxRetry,omitempty"`

	// retryPeriod is the least time between two retries.
	// +optional
	RetryPeriod metav1.Duration `json:"retryPeriod,omitempty"`

	// minHealthyPeriod: a replacement that stays healthy this long ends the retry
	// sequence, so a later failure counts as new (default 1h).
	// +optional
	MinHealthyPeriod *metav1.Duration `json:"minHealthyPeriod,omitempty"`
}

// KThreesControlPlaneStatus is the observed state, on the Cluster API v1beta2
// control-plane contract. There are no terminal failure fields: problems are conditions.
// +kubebuilder:validation:MinProperties=1
type KThreesControlPlaneStatus struct {
	// conditions describe the control plane's state: Available, Ready, Paused,
	// TokenAvailable, CertificatesAvailable, RollingOut, Remediating, EtcdClusterHealthy...
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// initialization reports the contract's one-time milestones.
	// +optional
	Initialization KThreesControlPlaneInitializationStatus `json:"initialization,omitempty,omitzero"`

	// selector selects the control plane's Machines, for the scale subresource.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Selector string `json:"selector,omitempty"`

	// replicas is the number of Machines of this control plane.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// readyReplicas is the number of Machines whose Ready condition is True.
	// +optional
	ReadyReplicas *int32 `json:"readyReplicas,omitempty"`

	// availableReplicas is the number of Machines whose Available condition is True.
	// +optional
	AvailableReplicas *int32 `json:"availableReplicas,omitempty"`

	// upToDateReplicas is the number of Machines that need no rollout.
	// +optional
	UpToDateReplicas *int32 `json:"upToDateReplicas,omitempty"`

	// versions are the servers' k3s versions with the number of servers at each,
	// ordered from the oldest to the newest version. A server's version is the one its
	// Node reports once it has one, else its Machine's.
	// +optional
	// +listType=map
	// +listMapKey=version
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	Versions []clusterv1.StatusVersion `json:"versions,omitempty"`

	// version is the oldest k3s version among the servers (the first of versions). The
	// contract prefers versions; version stays for readers that only know this field.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Version string `json:"version,omitempty"`

	// observedGeneration is the generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// lastRemediation describes the latest remediation.
	// +optional
	LastRemediation *LastRemediationStatus `json:"lastRemediation,omitempty"`

	// lastEtcdSnapshot is the newest etcd snapshot k3s reports, while
	// kthreesConfigSpec.serverConfig.etcd.snapshots is set. Added by capk3s.
	// +optional
	LastEtcdSnapshot *LastEtcdSnapshotStatus `json:"lastEtcdSnapshot,omitempty"`

	// etcdSnapshots summarizes all the etcd snapshots k3s records (scheduled, on
	// demand, before rollouts), while kthreesConfigSpec.serverConfig.etcd.snapshots
	// is set. Added by capk3s.
	// +optional
	EtcdSnapshots *EtcdSnapshotsSummary `json:"etcdSnapshots,omitempty"`

	// registration is the ready server that joining machines are sent to, while
	// spec.registrationMethod is InternalAddress or ExternalAddress and one such
	// server has an address of that type. Added by capk3s.
	// +optional
	Registration *RegistrationStatus `json:"registration,omitempty"`

	// certificates reports the soonest k3s certificate expiry the nodes report and the
	// cluster CAs' expiry. Added by capk3s.
	// +optional
	Certificates *CertificatesStatus `json:"certificates,omitempty"`
}

// KThreesControlPlaneInitializationStatus is the contract's initialization block.
// +kubebuilder:validation:MinProperties=1
type KThreesControlPlaneInitializationStatus struct {
	// controlPlaneInitialized is true once the first server's API answers and its node
	// registered. It never goes back to false.
	// +optional
	ControlPlaneInitialized *bool `json:"controlPlaneInitialized,omitempty"`
}

// LastRemediationStatus describes the latest remediation, so retries can be counted.
type LastRemediationStatus struct {
	// machine is the name of the latest remediated Machine.
	// +required
	Machine string `json:"machine"`

	// time is when it was remediated.
	// +required
	Time metav1.Time `json:"time"`

	// retryCount counts the retries for the same original failure.
	// +required
	RetryCount int32 `json:"retryCount"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kthreescontrolplanes,scope=Namespaced,categories=cluster-api,shortName=k3scp
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta2"
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta1=v1beta1"
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",description="Cluster"
// +kubebuilder:printcolumn:name="Initialized",type="boolean",JSONPath=".status.initialization.controlPlaneInitialized",description="The first server's API answers"
// +kubebuilder:printcolumn:name="Available",type="string",JSONPath=`.status.conditions[?(@.type=="Available")].status`,description="The control plane passes its availability checks"
// +kubebuilder:printcolumn:name="Desired",type="integer",JSONPath=".spec.replicas",description="Desired servers"
// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".status.replicas",description="Servers"
// +kubebuilder:printcolumn:name="Ready",type="integer",JSONPath=".status.readyReplicas",description="Servers with Ready condition true"
// +kubebuilder:printcolumn:name="Up-to-date",type="integer",JSONPath=".status.upToDateReplicas",description="Servers that need no rollout"
// +kubebuilder:printcolumn:name="Rollout",type="string",JSONPath=`.status.conditions[?(@.type=="RollingOut")].reason`,description="RollingOut's reason: RollingOut, InPlaceUpdating (a server is updated in place), CertificatesRenewing (k3s restarted on a node to renew its certificates) or NotRollingOut"
// +kubebuilder:printcolumn:name="Rollout-Message",type="string",JSONPath=`.status.conditions[?(@.type=="RollingOut")].message`,description="Which servers roll out, and which one updates in place",priority=10
// +kubebuilder:printcolumn:name="Certificates-Expiry",type="string",JSONPath=".status.certificates.soonestExpiry",description="Soonest k3s certificate expiry a node reports within k3s's 120-day renewal window (empty: none)"
// +kubebuilder:printcolumn:name="Certificates-Node",type="string",JSONPath=".status.certificates.nodeName",description="The node that reports the soonest certificate expiry",priority=10
// +kubebuilder:printcolumn:name="Version",type="string",JSONPath=".spec.version",description="Desired k3s version"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// KThreesControlPlane runs a cluster's k3s servers: it creates the first one, joins
// more, scales, rolls out upgrades, remediates, and owns the cluster's secrets.
type KThreesControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired control plane.
	// +optional
	Spec KThreesControlPlaneSpec `json:"spec,omitempty"`

	// status is the observed state.
	// +optional
	Status KThreesControlPlaneStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions, for CAPI's v1beta2 conditions utilities.
func (c *KThreesControlPlane) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions sets the conditions, for CAPI's v1beta2 conditions utilities.
func (c *KThreesControlPlane) SetConditions(conditions []metav1.Condition) {
	c.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// KThreesControlPlaneList is a list of KThreesControlPlanes.
type KThreesControlPlaneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KThreesControlPlane `json:"items"`
}
