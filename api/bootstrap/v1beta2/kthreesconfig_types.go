package v1beta2

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KThreesConfigSpec is how one machine's k3s is installed and configured.
// The JSON names are those of cluster-api-k3s v0.3; fields that it did not have are
// marked "Added by capk3s".
// +kubebuilder:validation:XValidation:rule="!has(self.agentConfig) || !has(self.agentConfig.privateRegistry) || !has(self.agentConfig.registries)",message="set either agentConfig.privateRegistry (a path on the machine) or agentConfig.registries (rendered by capk3s), not both"
type KThreesConfigSpec struct {
	// files are written to the machine before k3s is installed.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=200
	Files []File `json:"files,omitempty"`

	// preK3sCommands run, in order, before k3s is installed.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	PreK3sCommands []string `json:"preK3sCommands,omitempty"`

	// postK3sCommands run, in order, after k3s has started.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	PostK3sCommands []string `json:"postK3sCommands,omitempty"`

	// agentConfig configures the k3s agent part, present on servers and agents alike.
	// +optional
	AgentConfig KThreesAgentConfig `json:"agentConfig,omitempty,omitzero"`

	// serverConfig configures k3s servers; ignored on agents.
	// +optional
	ServerConfig KThreesServerConfig `json:"serverConfig,omitempty,omitzero"`

	// version is the k3s version to install, e.g. "v1.36.3+k3s1". When empty, the
	// version of the owning Machine is used.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]*)?$`
	Version string `json:"version,omitempty"`

	// format is the bootstrap data's format: "cloud-config" (cloud-init) or
	// "ignition" (Ignition spec 3.4, for Flatcar, Fedora CoreOS and the like).
	// Empty means cloud-config. Added by capk3s.
	// +optional
	Format Format `json:"format,omitempty"`

	// bootCommands are shell commands run on every boot, before anything else:
	// cloud-init's bootcmd, or with Ignition a unit ordered before the bootstrap.
	// Added by capk3s.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=10240
	BootCommands []string `json:"bootCommands,omitempty"`

	// ntp configures time synchronization (cloud-init's ntp, or with Ignition
	// systemd-timesyncd). Added by capk3s.
	// +optional
	NTP *NTP `json:"ntp,omitempty"`

	// users are accounts to create; passwords come from Secrets only. Added by
	// capk3s.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Users []User `json:"users,omitempty"`

	// diskSetup partitions devices and creates file systems. Added by capk3s.
	// +optional
	DiskSetup *DiskSetup `json:"diskSetup,omitempty"`

	// mounts are file systems to mount, as fstab fields. Added by capk3s.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Mounts []MountPoints `json:"mounts,omitempty"`
}

// Format is the format of the bootstrap data, with the values of the Cluster API
// bootstrap contract's "format" Secret key.
// +kubebuilder:validation:Enum=cloud-config;ignition
type Format string

const (
	// CloudConfig is a cloud-init #cloud-config document.
	CloudConfig Format = "cloud-config"
	// Ignition is an Ignition config (JSON).
	Ignition Format = "ignition"
)

// KThreesServerConfig holds the k3s server options that capk3s sets in
// /etc/rancher/k3s/config.yaml.
type KThreesServerConfig struct {
	// kubeAPIServerArg are extra kube-apiserver flags ("name=value"), k3s's kube-apiserver-arg.
	// +optional
	// +listType=atomic
	KubeAPIServerArgs []string `json:"kubeAPIServerArg,omitempty"`

	// kubeControllerManagerArgs are extra kube-controller-manager flags.
	// +optional
	// +listType=atomic
	KubeControllerManagerArgs []string `json:"kubeControllerManagerArgs,omitempty"`

	// kubeSchedulerArgs are extra kube-scheduler flags.
	// +optional
	// +listType=atomic
	KubeSchedulerArgs []string `json:"kubeSchedulerArgs,omitempty"`

	// tlsSan are extra host names or IPs for the API server certificate. The control
	// plane endpoint is always added.
	// +optional
	// +listType=atomic
	TLSSan []string `json:"tlsSan,omitempty"`

	// bindAddress is the address k3s binds to (k3s default 0.0.0.0).
	// +optional
	BindAddress string `json:"bindAddress,omitempty"`

	// httpsListenPort is the API server's port (k3s default 6443).
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]{1,5}$`
	HTTPSListenPort string `json:"httpsListenPort,omitempty"`

	// advertiseAddress is the address the API server advertises to cluster members.
	// +optional
	AdvertiseAddress string `json:"advertiseAddress,omitempty"`

	// advertisePort is the port the API server advertises to cluster members.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]{1,5}$`
	AdvertisePort string `json:"advertisePort,omitempty"`

	// clusterCidr is the pod network (k3s default 10.42.0.0/16).
	// +optional
	ClusterCidr string `json:"clusterCidr,omitempty"`

	// serviceCidr is the service network (k3s default 10.43.0.0/16).
	// +optional
	ServiceCidr string `json:"serviceCidr,omitempty"`

	// clusterDNS is the cluster IP of CoreDNS; it must be inside serviceCidr.
	// +optional
	ClusterDNS string `json:"clusterDNS,omitempty"`

	// clusterDomain is the cluster's DNS domain (k3s default cluster.local).
	// +optional
	ClusterDomain string `json:"clusterDomain,omitempty"`

	// disableComponents are packaged k3s components not to deploy (k3s "disable"),
	// e.g. traefik, servicelb, local-storage, metrics-server.
	// +optional
	// +listType=atomic
	DisableComponents []string `json:"disableComponents,omitempty"`

	// disableExternalCloudProvider, when true, leaves the kubelet's --cloud-provider
	// unset. It is kept so that manifests written for cluster-api-k3s keep their
	// meaning; new manifests set cloudProviderName to "" instead.
	// +optional
	DeprecatedDisableExternalCloudProvider bool `json:"disableExternalCloudProvider,omitempty"`

	// disableCloudController turns off k3s's embedded cloud controller manager
	// (default true, because Cluster API clusters bring their own).
	// +optional
	DisableCloudController *bool `json:"disableCloudController,omitempty"`

	// cloudProviderName is the kubelet's --cloud-provider (default "external").
	// An empty string leaves the flag unset.
	// +optional
	CloudProviderName *string `json:"cloudProviderName,omitempty"`

	// systemDefaultRegistry is the registry that k3s pulls its system images from.
	// +optional
	SystemDefaultRegistry string `json:"systemDefaultRegistry,omitempty"`

	// datastore makes the servers keep the cluster state in an external datastore
	// instead of the embedded etcd. Unset: embedded etcd. It cannot be set or unset
	// on an existing object. Added by capk3s.
	// +optional
	Datastore *Datastore `json:"datastore,omitempty"`

	// etcd configures the embedded etcd: snapshots, and a restore on a new
	// cluster's first server. Not together with datastore. Added by capk3s.
	// +optional
	Etcd *Etcd `json:"etcd,omitempty"`

	// etcdProxyImage is the image of the pod through which cluster-api-k3s's
	// controller reached the workload cluster's etcd.
	//
	// Deprecated: ignored. capk3s runs no etcd proxy: it never connects to etcd, and
	// leaves membership changes to k3s's own etcd controller, which it asks through
	// Node annotations. The field is kept so that manifests written for
	// cluster-api-k3s are neither refused nor pruned; the webhooks warn when it is set.
	// +optional
	DeprecatedEtcdProxyImage string `json:"etcdProxyImage,omitempty"`

	// extraConfig holds k3s server options that have no field here, written into
	// /etc/rancher/k3s/config.yaml on servers: option name (the k3s flag without
	// "--", e.g. flannel-backend, secrets-encryption, embedded-registry) to value.
	// A value is a string, a bool, a number or a list of strings; a key may end in
	// "+", k3s's syntax for appending to a list. Typed fields always win: an option
	// a field sets is not taken from here. On servers, an option in both this map
	// and agentConfig.extraConfig takes this map's value. Refused: keys that are
	// not k3s server options, and the options capk3s sets itself (token, server,
	// cluster-init, data-dir, datastore-*, and those of the typed fields, such as
	// tls-san or kube-apiserver-arg: the error names the field to use). Added by
	// capk3s.
	// +optional
	// +kubebuilder:validation:MaxProperties=100
	ExtraConfig map[string]apiextensionsv1.JSON `json:"extraConfig,omitempty"`
}

// KThreesAgentConfig holds the k3s agent options, used on servers and agents.
type KThreesAgentConfig struct {
	// nodeLabels are labels the kubelet registers the node with ("key=value").
	// +optional
	// +listType=atomic
	NodeLabels []string `json:"nodeLabels,omitempty"`

	// nodeTaints are taints the kubelet registers the node with ("key=value:Effect").
	// +optional
	// +listType=atomic
	NodeTaints []string `json:"nodeTaints,omitempty"`

	// privateRegistry is the path of a registries.yaml already on the machine
	// (k3s default /etc/rancher/k3s/registries.yaml). To have capk3s write that file,
	// use registries instead.
	// +optional
	PrivateRegistry string `json:"privateRegistry,omitempty"`

	// registries describes registry mirrors and credentials; capk3s renders them into
	// /etc/rancher/k3s/registries.yaml, taking credentials from Secrets so that they
	// never appear in this object. Added by capk3s: cluster-api-k3s only took a path.
	// +optional
	Registries *Registries `json:"registries,omitempty"`

	// kubeletArgs are extra kubelet flags ("name=value").
	// +optional
	// +listType=atomic
	KubeletArgs []string `json:"kubeletArgs,omitempty"`

	// kubeProxyArgs are extra kube-proxy flags ("name=value").
	// +optional
	// +listType=atomic
	KubeProxyArgs []string `json:"kubeProxyArgs,omitempty"`

	// nodeName overrides the node's name (default: the host name).
	// +optional
	NodeName string `json:"nodeName,omitempty"`

	// airGapped installs k3s without reaching the internet: the k3s binary, its images
	// and the install script must already be on the machine.
	// +optional
	AirGapped bool `json:"airGapped,omitempty"`

	// airGappedInstallScriptPath is where the install script lies on an air-gapped
	// machine (default /opt/install.sh).
	// +optional
	AirGappedInstallScriptPath string `json:"airGappedInstallScriptPath,omitempty"`

	// installScriptURL is where this machine downloads k3s's install script from
	// (a mirror of https://get.k3s.io); default the bootstrap manager's
	// --k3s-install-script-url. An https URL; not with airGapped. Added by capk3s.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	InstallScriptURL string `json:"installScriptURL,omitempty"`

	// installScriptSHA256 is the sha256 (64 lowercase hex digits) the install script
	// must have: the downloaded script, or on an air-gapped machine the script on
	// disk. The machine checks it before running the script; on a mismatch it
	// installs nothing and reports the failure. Added by capk3s.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	InstallScriptSHA256 string `json:"installScriptSHA256,omitempty"`

	// artifactURL is a mirror of k3s's release downloads: the install script
	// fetches <artifactURL>/<version>/k3s and sha256sum-<arch>.txt from it rather
	// than from GitHub, and checks the binary against that file
	// (INSTALL_K3S_ARTIFACT_URL). An https URL without query; not with airGapped.
	// Added by capk3s.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	ArtifactURL string `json:"artifactURL,omitempty"`

	// airGappedChecksums are files an air-gapped machine must already hold, each
	// with its sha256: the k3s binary (/usr/local/bin/k3s), the image tarballs
	// (/var/lib/rancher/k3s/agent/images/...). The machine checks them before the
	// install; a missing file or a mismatch installs nothing and reports the
	// failure. Only with airGapped. Added by capk3s.
	// +optional
	// +listType=map
	// +listMapKey=path
	// +kubebuilder:validation:MaxItems=32
	AirGappedChecksums []FileChecksum `json:"airGappedChecksums,omitempty"`

	// extraConfig holds k3s agent options that have no field here, written into
	// /etc/rancher/k3s/config.yaml on every machine, servers included: option name
	// (the k3s flag without "--", e.g. node-ip, flannel-iface, selinux) to value.
	// A value is a string, a bool, a number or a list of strings; a key may end in
	// "+", k3s's syntax for appending to a list. Typed fields always win: an option
	// a field sets is not taken from here, and on servers serverConfig.extraConfig
	// wins over this map. Refused: keys that are not k3s agent options (server-only
	// options go in serverConfig.extraConfig), and the options capk3s sets itself
	// (token, server, data-dir, and those of the typed fields, such as node-label
	// or kubelet-arg: the error names the field to use). Added by capk3s.
	// +optional
	// +kubebuilder:validation:MaxProperties=100
	ExtraConfig map[string]apiextensionsv1.JSON `json:"extraConfig,omitempty"`
}

// FileChecksum is a file on the machine and the sha256 it must have.
type FileChecksum struct {
	// path is the file's absolute path.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path"`

	// sha256 is the file's sha256, 64 lowercase hex digits.
	// +required
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	SHA256 string `json:"sha256"`
}

// Registries is the structured form of k3s's registries.yaml. Added by capk3s.
type Registries struct {
	// mirrors redirect pulls from a registry host to other endpoints.
	// +optional
	// +listType=map
	// +listMapKey=registry
	// +kubebuilder:validation:MaxItems=100
	Mirrors []RegistryMirror `json:"mirrors,omitempty"`

	// configs give credentials and TLS settings per registry host.
	// +optional
	// +listType=map
	// +listMapKey=registry
	// +kubebuilder:validation:MaxItems=100
	Configs []RegistryConfig `json:"configs,omitempty"`
}

// RegistryMirror sends pulls for one registry to a list of endpoints, in order.
type RegistryMirror struct {
	// registry is the host being mirrored, e.g. "docker.io", or "*" for every registry.
	// +required
	// +kubebuilder:validation:MinLength=1
	Registry string `json:"registry"`

	// endpoints are the mirror URLs, tried in order.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	Endpoints []string `json:"endpoints"`
}

// RegistryConfig holds the credentials and TLS settings for one registry host.
type RegistryConfig struct {
	// registry is the host these settings apply to, e.g. "registry.example.com:5000".
	// +required
	// +kubebuilder:validation:MinLength=1
	Registry string `json:"registry"`

	// authSecret names a Secret in the KThreesConfig's namespace with keys "username"
	// and "password" (or "auth", or "identitytoken").
	// +optional
	AuthSecret *SecretReference `json:"authSecret,omitempty"`

	// caSecret names a Secret whose key "ca.crt" is the CA bundle for this registry.
	// +optional
	CASecret *SecretReference `json:"caSecret,omitempty"`

	// insecureSkipVerify turns off TLS verification for this registry.
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// SecretReference names a Secret in the referring object's namespace.
type SecretReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// KThreesConfigStatus is the observed state, on the Cluster API v1beta2 bootstrap contract.
// +kubebuilder:validation:MinProperties=1
type KThreesConfigStatus struct {
	// conditions describe the config's state: Ready, DataSecretAvailable,
	// CertificatesAvailable, Paused.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// initialization reports the contract's one-time milestones.
	// +optional
	Initialization KThreesConfigInitializationStatus `json:"initialization,omitempty,omitzero"`

	// dataSecretName is the Secret that holds the bootstrap data.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	DataSecretName string `json:"dataSecretName,omitempty"`

	// observedGeneration is the generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// KThreesConfigInitializationStatus is the contract's initialization block.
// +kubebuilder:validation:MinProperties=1
type KThreesConfigInitializationStatus struct {
	// dataSecretCreated is true once the bootstrap data Secret exists.
	// +optional
	DataSecretCreated *bool `json:"dataSecretCreated,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kthreesconfigs,scope=Namespaced,categories=cluster-api,shortName=k3sc
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta2"
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta1=v1beta1"
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",description="Cluster"
// +kubebuilder:printcolumn:name="Data secret created",type="boolean",JSONPath=".status.initialization.dataSecretCreated",description="The bootstrap data Secret exists"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// KThreesConfig configures k3s on one Machine and, through its controller,
// produces that Machine's bootstrap data.
type KThreesConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired configuration.
	// +optional
	Spec KThreesConfigSpec `json:"spec,omitempty,omitzero"`

	// status is the observed state.
	// +optional
	Status KThreesConfigStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions, for CAPI's v1beta2 conditions utilities.
func (c *KThreesConfig) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions sets the conditions, for CAPI's v1beta2 conditions utilities.
func (c *KThreesConfig) SetConditions(conditions []metav1.Condition) {
	c.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// KThreesConfigList is a list of KThreesConfigs.
type KThreesConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KThreesConfig `json:"items"`
}
