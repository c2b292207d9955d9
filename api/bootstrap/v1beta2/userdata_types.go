package v1beta2

// AdditionalUserData is the user's own bootstrap content, merged into what capk3s
// renders: a cloud-config fragment for format cloud-config, an Ignition config for
// format ignition. Keys and paths capk3s writes itself cannot be set here; the
// merge rules are in docs/reference.md.
// +kubebuilder:validation:MinProperties=1
type AdditionalUserData struct {
	// cloudConfig is a YAML mapping of cloud-config keys (e.g. timezone, locale,
	// apt, packages) added to the rendered #cloud-config. Keys capk3s writes
	// (write_files, runcmd, bootcmd, users, groups, ntp, disk_setup, fs_setup,
	// mounts, device_aliases) are refused: use files, preK3sCommands,
	// bootCommands, users, ntp, diskSetup and mounts instead. Only with format
	// cloud-config.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	CloudConfig string `json:"cloudConfig,omitempty"`

	// ignition is an Ignition config (JSON, spec 3.0 to 3.4) merged into the
	// rendered config by Ignition's own merge rules. It may not write a path or
	// a systemd unit that capk3s writes. Only with format ignition.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	Ignition string `json:"ignition,omitempty"`
}
