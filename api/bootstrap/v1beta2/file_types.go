package v1beta2

// Encoding is how a file's content is encoded.
// +kubebuilder:validation:Enum=base64;gzip;gzip+base64
type Encoding string

const (
	// Base64 content is base64 encoded.
	Base64 Encoding = "base64"
	// Gzip content is gzip compressed.
	Gzip Encoding = "gzip"
	// GzipBase64 content is gzip compressed, then base64 encoded.
	GzipBase64 Encoding = "gzip+base64"
)

// File is a file written to the machine by cloud-init.
// +kubebuilder:validation:XValidation:rule="!(has(self.content) && has(self.contentFrom))",message="set either content or contentFrom, not both"
type File struct {
	// path is the absolute path of the file on the machine.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Path string `json:"path"`

	// owner is the file's owner, e.g. "root:root".
	// +optional
	Owner string `json:"owner,omitempty"`

	// permissions is the file's mode in octal, e.g. "0640".
	// +optional
	// +kubebuilder:validation:Pattern=`^0?[0-7]{3}$`
	Permissions string `json:"permissions,omitempty"`

	// encoding of content.
	// +optional
	Encoding Encoding `json:"encoding,omitempty"`

	// content is the file's content.
	// +optional
	Content string `json:"content,omitempty"`

	// contentFrom takes the content from a Secret or a ConfigMap instead.
	// +optional
	ContentFrom *FileSource `json:"contentFrom,omitempty"`
}

// FileSource is where a file's content comes from: one key of a Secret or of a
// ConfigMap, exactly one of the two.
// +kubebuilder:validation:XValidation:rule="has(self.secret) != has(self.configMap)",message="set exactly one of secret and configMap"
type FileSource struct {
	// secret holds the content. Unless permissions say otherwise, the file is
	// written 0600.
	// +optional
	Secret SecretFileSource `json:"secret,omitempty,omitzero"`

	// configMap holds the content, under data or binaryData. Unless permissions
	// say otherwise, the file is written 0644, like inline content. Added by
	// capk3s.
	// +optional
	ConfigMap ConfigMapFileSource `json:"configMap,omitempty,omitzero"`
}

// SecretFileSource is one key of a Secret in the KThreesConfig's namespace.
type SecretFileSource struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// key in the Secret's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
}

// ConfigMapFileSource is one key of a ConfigMap in the KThreesConfig's namespace.
type ConfigMapFileSource struct {
	// name of the ConfigMap.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key in the ConfigMap's data or binaryData.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}
