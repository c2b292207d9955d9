package v1beta2

// Datastore points k3s servers at an external datastore (PostgreSQL, MySQL or an
// external etcd, through k3s's kine) instead of the embedded etcd. Every value is
// taken from a Secret in the config's namespace: the endpoint usually carries a
// password, so it never appears in this object. Added by capk3s.
// +kubebuilder:validation:XValidation:rule="has(self.certSecret) == has(self.keySecret)",message="set certSecret and keySecret together: a client certificate is useless without its key"
type Datastore struct {
	// endpointSecret names the Secret key whose value is k3s's datastore-endpoint,
	// e.g. "postgres://user:password@db.example.com:5432/k3s" or
	// "https://etcd-1.example.com:2379,https://etcd-2.example.com:2379".
	// +required
	EndpointSecret SecretKeyReference `json:"endpointSecret"`

	// caSecret names the Secret key holding the PEM CA bundle that verifies the
	// datastore's server certificate (k3s datastore-cafile).
	// +optional
	CASecret *SecretKeyReference `json:"caSecret,omitempty"`

	// certSecret names the Secret key holding the PEM client certificate that k3s
	// presents to the datastore (k3s datastore-certfile); requires keySecret.
	// +optional
	CertSecret *SecretKeyReference `json:"certSecret,omitempty"`

	// keySecret names the Secret key holding the PEM private key of certSecret
	// (k3s datastore-keyfile); requires certSecret.
	// +optional
	KeySecret *SecretKeyReference `json:"keySecret,omitempty"`
}

// SecretKeyReference names one key of a Secret in the referring object's namespace.
// The rules sit on the object rather than on its strings because the apiserver
// echoes a rejected string in its error, but not a rejected object: a connection
// string pasted here by mistake must not end up in a client's terminal or in the
// apiserver's audit log of the response.
// +kubebuilder:validation:XValidation:rule="self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",fieldPath=".name",message="must be the name of a Secret (lower-case letters, digits, '-' and '.'), not the value itself: put the value into a Secret and name it here"
// +kubebuilder:validation:XValidation:rule="self.key.matches('^[-._a-zA-Z0-9]+$')",fieldPath=".key",message="must be a Secret data key (letters, digits, '-', '_' and '.'), not the value itself"
type SecretKeyReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key in the Secret's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}
