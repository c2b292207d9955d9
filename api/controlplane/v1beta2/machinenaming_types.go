package v1beta2

// MachineNamingSpec says how the control plane names the Machines it creates. Each
// server's KThreesConfig and infrastructure machine take the name of its Machine.
// +kubebuilder:validation:MinProperties=1
type MachineNamingSpec struct {
	// template is a Go text/template that renders the name of each new server Machine.
	// Unset means "{{ .kthreesControlPlane.name }}-{{ .random }}".
	// Its variables are .cluster.name (the Cluster's name), .kthreesControlPlane.name
	// (this control plane's name) and .random (five random lowercase letters and
	// digits, different for every Machine). It holds only text and those variables,
	// each alone in an action such as {{ .random }} or {{- .random -}}: no functions,
	// pipelines, $variables, range, if, with, template, define or block. The name
	// must depend on .random, so that two Machines never get the same one, and must
	// be a valid object name (a lowercase DNS-1123 subdomain). A name longer than 63 characters is cut to 58
	// and given a random 5-character suffix.
	// Changing it names only the Machines created afterwards: it never replaces a server.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Template string `json:"template,omitempty"`
}
