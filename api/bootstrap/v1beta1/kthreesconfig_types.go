package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1" //nolint:staticcheck // the v1beta1 contract types of the v1beta1 API served for cluster-api-k3s users
)

// KThreesConfigSpec is cluster-api-k3s v0.3's v1beta1 bootstrap configuration.
type KThreesConfigSpec struct {
	// files are written to the machine before k3s is installed.
	// +optional
	Files []File `json:"files,omitempty"`

	// preK3sCommands run, in order, before k3s is installed.
	// +optional
	PreK3sCommands []string `json:"preK3sCommands,omitempty"`

	// postK3sCommands run, in order, after k3s has started.
	// +optional
	PostK3sCommands []string `json:"postK3sCommands,omitempty"`

	// agentConfig configures the k3s agent part, on servers and agents alike.
	// +optional
	AgentConfig KThreesAgentConfig `json:"agentConfig,omitempty"`

	// serverConfig configures k3s servers.
	// +optional
	ServerConfig KThreesServerConfig `json:"serverConfig,omitempty"`

	// version is the k3s version to install.
	// +optional
	Version string `json:"version,omitempty"`
}

// KThreesServerConfig is the v1beta1 set of k3s server options.
type KThreesServerConfig struct {
	// kubeAPIServerArg are extra kube-apiserver flags.
	// +optional
	KubeAPIServerArgs []string `json:"kubeAPIServerArg,omitempty"`

	// kubeControllerManagerArgs are extra kube-controller-manager flags.
	// +optional
	KubeControllerManagerArgs []string `json:"kubeControllerManagerArgs,omitempty"`

	// kubeSchedulerArgs are extra kube-scheduler flags.
	// +optional
	KubeSchedulerArgs []string `json:"kubeSchedulerArgs,omitempty"`

	// tlsSan are extra names for the API server certificate.
	// +optional
	TLSSan []string `json:"tlsSan,omitempty"`

	// bindAddress is the address k3s binds to.
	// +optional
	BindAddress string `json:"bindAddress,omitempty"`

	// httpsListenPort is the API server's port.
	// +optional
	HTTPSListenPort string `json:"httpsListenPort,omitempty"`

	// advertiseAddress is the address the API server advertises.
	// +optional
	AdvertiseAddress string `json:"advertiseAddress,omitempty"`

	// advertisePort is the port the API server advertises.
	// +optional
	AdvertisePort string `json:"advertisePort,omitempty"`

	// clusterCidr is the pod network.
	// +optional
	ClusterCidr string `json:"clusterCidr,omitempty"`

	// serviceCidr is the service network.
	// +optional
	ServiceCidr string `json:"serviceCidr,omitempty"`

	// clusterDNS is the cluster IP of CoreDNS.
	// +optional
	ClusterDNS string `json:"clusterDNS,omitempty"`

	// clusterDomain is the cluster's DNS domain.
	// +optional
	ClusterDomain string `json:"clusterDomain,omitempty"`

	// disableComponents are packaged k3s components not to deploy.
	// +optional
	DisableComponents []string `json:"disableComponents,omitempty"`

	// disableExternalCloudProvider leaves the kubelet's --cloud-provider unset.
	// +optional
	DisableExternalCloudProvider bool `json:"disableExternalCloudProvider,omitempty"`
}

// KThreesAgentConfig is the v1beta1 set of k3s agent options.
type KThreesAgentConfig struct {
	// nodeLabels are labels the kubelet registers the node with.
	// +optional
	NodeLabels []string `json:"nodeLabels,omitempty"`

	// nodeTaints are taints the kubelet registers the node with.
	// +optional
	NodeTaints []string `json:"nodeTaints,omitempty"`

	// privateRegistry is the path of a registries.yaml on the machine.
	// +optional
	PrivateRegistry string `json:"privateRegistry,omitempty"`

	// kubeletArgs are extra kubelet flags.
	// +optional
	KubeletArgs []string `json:"kubeletArgs,omitempty"`

	// kubeProxyArgs are extra kube-proxy flags.
	// +optional
	KubeProxyArgs []string `json:"kubeProxyArgs,omitempty"`

	// nodeName overrides the node's name.
	// +optional
	NodeName string `json:"nodeName,omitempty"`

	// airGapped installs k3s from what is already on the machine.
	// +optional
	AirGapped bool `json:"airGapped,omitempty"`
}

// KThreesConfigStatus is the status on the Cluster API v1beta1 bootstrap contract.
type KThreesConfigStatus struct {
	// ready is true once the bootstrap data Secret exists.
	// +optional
	Ready bool `json:"ready,omitempty"`

	// bootstrapData is an obsolete inline copy of the bootstrap data.
	// +optional
	BootstrapData []byte `json:"bootstrapData,omitempty"`

	// dataSecretName is the Secret that holds the bootstrap data.
	// +optional
	DataSecretName *string `json:"dataSecretName,omitempty"`

	// failureReason is the v1beta1 contract's terminal error reason.
	// +optional
	FailureReason string `json:"failureReason,omitempty"`

	// failureMessage is the v1beta1 contract's terminal error message.
	// +optional
	FailureMessage string `json:"failureMessage,omitempty"`

	// observedGeneration is the generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions in the v1beta1 shape (with severity).
	// +optional
	Conditions clusterv1beta1.Conditions `json:"conditions,omitempty"`
}

// Encoding is how a file's content is encoded.
// +kubebuilder:validation:Enum=base64;gzip;gzip+base64
type Encoding string

// File is a file written to the machine.
type File struct {
	// path is the file's absolute path on the machine.
	Path string `json:"path"`

	// owner is the file's owner, e.g. "root:root".
	// +optional
	Owner string `json:"owner,omitempty"`

	// permissions is the file's mode in octal.
	// +optional
	Permissions string `json:"permissions,omitempty"`

	// encoding of content.
	// +optional
	Encoding Encoding `json:"encoding,omitempty"`

	// content is the file's content.
	// +optional
	Content string `json:"content,omitempty"`

	// contentFrom takes the content from a Secret.
	// +optional
	ContentFrom *FileSource `json:"contentFrom,omitempty"`
}

// FileSource is where a file's content comes from.
type FileSource struct {
	// secret holds the content.
	Secret SecretFileSource `json:"secret"`
}

// SecretFileSource is one key of a Secret in the config's namespace.
type SecretFileSource struct {
	// name of the Secret.
	Name string `json:"name"`

	// key in the Secret's data.
	Key string `json:"key"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kthreesconfigs,scope=Namespaced,categories=cluster-api,shortName=k3sc
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="bootstrap.cluster.x-k8s.io/v1beta1 KThreesConfig is deprecated; use bootstrap.cluster.x-k8s.io/v1beta2"
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",description="Cluster"
// +kubebuilder:printcolumn:name="Ready",type="boolean",JSONPath=".status.ready",description="The bootstrap data Secret exists"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// KThreesConfig is the deprecated v1beta1 KThreesConfig.
type KThreesConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KThreesConfigSpec   `json:"spec,omitempty"`
	Status KThreesConfigStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// KThreesConfigList is a list of v1beta1 KThreesConfigs.
type KThreesConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KThreesConfig `json:"items"`
}
