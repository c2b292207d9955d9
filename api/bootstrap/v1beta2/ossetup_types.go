package v1beta2

// The operating-system setup a machine gets before k3s: boot commands, time
// servers, users, disks and mounts. The shapes are the ones Cluster API users
// already write for these settings, so their YAML carries over, with one
// deliberate difference: a user's password can only come from a Secret.
// Cloud-config carries each part in cloud-init's own key; Ignition in its own
// equivalent, and what Ignition cannot express is refused (the webhook and the
// renderer name the field), never dropped. All added by capk3s.

// NTP configures the machine's time synchronization.
// +kubebuilder:validation:MinProperties=1
type NTP struct {
	// servers are the NTP servers to use, host names or addresses, in order of
	// preference.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	Servers []string `json:"servers,omitempty"`

	// enabled turns the time client on (the default when ntp is set). false
	// leaves the image's time setup alone, so servers must then be empty.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// User is an account created on the machine.
type User struct {
	// name is the login name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`

	// gecos is the account's comment field, usually the full name.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Gecos string `json:"gecos,omitempty"`

	// groups are the supplementary groups, comma separated ("wheel,docker").
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Groups string `json:"groups,omitempty"`

	// homeDir is the home directory (default /home/<name>).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	HomeDir string `json:"homeDir,omitempty"`

	// inactive creates the account disabled. cloud-config only: Ignition cannot
	// create a disabled account, and refuses it.
	// +optional
	Inactive *bool `json:"inactive,omitempty"`

	// shell is the login shell, e.g. /bin/bash.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Shell string `json:"shell,omitempty"`

	// passwdFrom takes the account's password hash from a Secret key. The value
	// must be a crypt(3) hash ("$6$...", as `mkpasswd -m sha-512` prints it):
	// bootstrap data is readable by whoever can read the machine's user data, so a
	// clear-text password never goes into it. There is no inline field on purpose.
	// +optional
	PasswdFrom *PasswdSource `json:"passwdFrom,omitempty"`

	// primaryGroup is the primary group (default: a group named after the user).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	PrimaryGroup string `json:"primaryGroup,omitempty"`

	// lockPassword disables password login. Default: locked unless passwdFrom is
	// set (a password given is meant to be used). With Ignition, which locks
	// exactly the accounts it gives no hash, it may only say the same.
	// +optional
	LockPassword *bool `json:"lockPassword,omitempty"`

	// sudo is a sudoers rule for the user, e.g. "ALL=(ALL) NOPASSWD:ALL".
	// cloud-config only: Ignition has no sudo setting and refuses it (use groups,
	// e.g. wheel, or a file in /etc/sudoers.d).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Sudo string `json:"sudo,omitempty"`

	// sshAuthorizedKeys are public keys allowed to log in as this user.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=2048
	SSHAuthorizedKeys []string `json:"sshAuthorizedKeys,omitempty"`
}

// PasswdSource is where a user's password hash comes from.
type PasswdSource struct {
	// secret is the Secret key, in the config's namespace, holding the hash.
	// +required
	Secret SecretKeyReference `json:"secret"`
}

// DiskSetup prepares block devices: partition tables first, then file systems.
// +kubebuilder:validation:MinProperties=1
type DiskSetup struct {
	// partitions lay out partition tables, one entry per device.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Partitions []Partition `json:"partitions,omitempty"`

	// filesystems are created once the partitions exist.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Filesystems []Filesystem `json:"filesystems,omitempty"`
}

// Partition is the partition table of one device.
// +kubebuilder:validation:XValidation:rule="!(has(self.layout) && has(self.diskLayout))",message="set either layout or diskLayout, not both"
type Partition struct {
	// device is the disk, e.g. /dev/sdb.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Device string `json:"device"`

	// layout true makes one partition over the whole device; false leaves the
	// device as it is.
	// +optional
	Layout *bool `json:"layout,omitempty"`

	// overwrite partitions the device even if it already holds a partition
	// table or file system. It destroys data.
	// +optional
	Overwrite *bool `json:"overwrite,omitempty"`

	// tableType is mbr (cloud-init's default) or gpt. Ignition only writes GPT,
	// so with format ignition it must be gpt.
	// +optional
	// +kubebuilder:validation:Enum=mbr;gpt
	TableType string `json:"tableType,omitempty"`

	// diskLayout lists the partitions in order, each a share of the disk.
	// cloud-config only: Ignition sizes partitions in MiB, not in percent, and
	// refuses it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	DiskLayout []PartitionSpec `json:"diskLayout,omitempty"`
}

// PartitionSpec is one partition of a diskLayout.
type PartitionSpec struct {
	// percentage of the disk this partition takes, 1 to 100.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Percentage int32 `json:"percentage"`

	// partitionType is Linux, LinuxSwap, LinuxRAID, LVM, Fat32, NTFS,
	// LinuxExtended, or a GPT type GUID. Default: Linux.
	// +optional
	// +kubebuilder:validation:MaxLength=36
	// +kubebuilder:validation:Pattern=`^(Linux|LinuxSwap|LinuxRAID|LVM|Fat32|NTFS|LinuxExtended|[0-9A-Fa-f]{8}(-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12})$`
	PartitionType string `json:"partitionType,omitempty"`
}

// Filesystem is a file system to create.
type Filesystem struct {
	// device is the disk or partition, e.g. /dev/sdb or /dev/sdb1.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Device string `json:"device"`

	// filesystem is the type, e.g. ext4 or xfs.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Filesystem string `json:"filesystem"`

	// label is the file system label; mounts can name it as LABEL=<label>.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Label string `json:"label,omitempty"`

	// partition picks the partition of device: a number, "none" (the device
	// itself), or cloud-init's "auto" / "any". Ignition takes a number or "none".
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Partition string `json:"partition,omitempty"`

	// overwrite creates the file system even over an existing one. It destroys
	// data.
	// +optional
	Overwrite *bool `json:"overwrite,omitempty"`

	// replaceFS is cloud-init's directive to replace an existing file system of
	// this type (Azure's ephemeral disk). cloud-config only.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	ReplaceFS string `json:"replaceFS,omitempty"`

	// extraOpts are extra arguments to mkfs.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	ExtraOpts []string `json:"extraOpts,omitempty"`
}

// MountPoints is one mount as an fstab line's fields: device, mount point,
// type, options, dump, pass. Only the device is required; cloud-init fills in
// the rest.
// +kubebuilder:validation:MinItems=1
// +kubebuilder:validation:MaxItems=6
// +kubebuilder:validation:items:MinLength=1
// +kubebuilder:validation:items:MaxLength=512
type MountPoints []string
