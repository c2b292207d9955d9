package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1" //nolint:staticcheck // the v1beta1 contract types of the v1beta1 API served for cluster-api-k3s users

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
)

// KThreesControlPlaneSpec is cluster-api-k3s v0.3's v1beta1 control plane spec.
type KThreesControlPlaneSpec struct {
	// replicas is the number of servers.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// version is the k3s version of the servers.
	Version string `json:"version"`

	// infrastructureTemplate is the infrastructure machine template servers are cloned from.
	InfrastructureTemplate corev1.ObjectReference `json:"infrastructureTemplate"`

	// kthreesConfigSpec configures k3s on every server.
	// +optional
	KThreesConfigSpec bootstrapv1beta1.KThreesConfigSpec `json:"kthreesConfigSpec,omitempty"`

	// upgradeAfter replaces every server created before this time (v1beta2: rolloutAfter).
	// +optional
	UpgradeAfter *metav1.Time `json:"upgradeAfter,omitempty"`

	// nodeDrainTimeout bounds the time spent draining a server's node.
	// +optional
	NodeDrainTimeout *metav1.Duration `json:"nodeDrainTimeout,omitempty"`

	// machineTemplate holds the metadata given to each server's Machine.
	// +optional
	MachineTemplate KThreesControlPlaneMachineTemplate `json:"machineTemplate,omitempty"`

	// remediationStrategy says how unhealthy servers are replaced.
	// +optional
	RemediationStrategy *RemediationStrategy `json:"remediationStrategy,omitempty"`
}

// KThreesControlPlaneMachineTemplate is the v1beta1 machine template: metadata only.
type KThreesControlPlaneMachineTemplate struct {
	// metadata is given to each Machine.
	// +optional
	ObjectMeta clusterv1beta1.ObjectMeta `json:"metadata,omitempty"`
}

// RemediationStrategy says how unhealthy servers are replaced.
type RemediationStrategy struct {
	// maxRetry bounds the retries of one failure's remediation.
	// +optional
	MaxRetry *int32 `json:"maxRetry,omitempty"`

	// retryPeriod is the least time between two retries.
	// +optional
	RetryPeriod metav1.Duration `json:"retryPeriod,omitempty"`

	// minHealthyPeriod ends a retry sequence once a replacement stays healthy this long.
	// +optional
	MinHealthyPeriod *metav1.Duration `json:"minHealthyPeriod,omitempty"`
}

// KThreesControlPlaneStatus is the status on the Cluster API v1beta1 control-plane contract.
type KThreesControlPlaneStatus struct {
	// selector selects the control plane's Machines, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// replicas is the number of servers.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// updatedReplicas is the number of servers at the desired spec.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// readyReplicas is the number of ready servers.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// unavailableReplicas is the number of servers not available.
	// +optional
	UnavailableReplicas int32 `json:"unavailableReplicas,omitempty"`

	// initialized is true once the first server is up.
	// +optional
	Initialized bool `json:"initialized"`

	// ready is true while the control plane serves its API.
	// +optional
	Ready bool `json:"ready"`

	// failureReason is the v1beta1 contract's terminal error reason.
	// +optional
	FailureReason string `json:"failureReason,omitempty"`

	// failureMessage is the v1beta1 contract's terminal error message.
	// +optional
	FailureMessage *string `json:"failureMessage,omitempty"`

	// observedGeneration is the generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions in the v1beta1 shape (with severity).
	// +optional
	Conditions clusterv1beta1.Conditions `json:"conditions,omitempty"`

	// lastRemediation describes the latest remediation.
	// +optional
	LastRemediation *LastRemediationStatus `json:"lastRemediation,omitempty"`
}

// LastRemediationStatus describes the latest remediation.
type LastRemediationStatus struct {
	// machine is the latest remediated Machine.
	Machine string `json:"machine"`

	// timestamp is when it was remediated.
	Timestamp metav1.Time `json:"timestamp"`

	// retryCount counts the retries for the same original failure.
	RetryCount int32 `json:"retryCount"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kthreescontrolplanes,scope=Namespaced,categories=cluster-api,shortName=k3scp
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:deprecatedversion:warning="controlplane.cluster.x-k8s.io/v1beta1 KThreesControlPlane is deprecated; use controlplane.cluster.x-k8s.io/v1beta2"
// +kubebuilder:printcolumn:name="Initialized",type=boolean,JSONPath=".status.initialized",description="The first server is up"
// +kubebuilder:printcolumn:name="Ready",type=boolean,JSONPath=".status.ready",description="The control plane serves its API"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=".spec.version",description="Desired k3s version"
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=".status.replicas",description="Servers"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// KThreesControlPlane is the deprecated v1beta1 KThreesControlPlane.
type KThreesControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KThreesControlPlaneSpec   `json:"spec,omitempty"`
	Status KThreesControlPlaneStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// KThreesControlPlaneList is a list of v1beta1 KThreesControlPlanes.
type KThreesControlPlaneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KThreesControlPlane `json:"items"`
}
