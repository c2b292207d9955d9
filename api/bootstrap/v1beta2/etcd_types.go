package v1beta2

// Etcd configures the servers' embedded etcd. A struct of its own, so that further
// etcd settings have a place beside snapshots. It makes no sense with
// serverConfig.datastore (no embedded etcd then), and the webhooks refuse both
// together. Added by capk3s.
type Etcd struct {
	// snapshots configures k3s's scheduled etcd snapshots (k3s etcd-snapshot-*),
	// kept on each server's disk and, with s3, uploaded to an S3 bucket. Unset: k3s's
	// defaults (a snapshot every 12 hours, 5 kept), and the control plane reports no
	// snapshot status.
	// +optional
	Snapshots *EtcdSnapshots `json:"snapshots,omitempty"`

	// restoreFrom makes the first server of a new cluster restore the embedded etcd
	// from this snapshot before it starts (k3s cluster-reset with
	// cluster-reset-restore-path): an absolute path of a snapshot file on the
	// machine, or with snapshots.s3 set, the name of a snapshot in the bucket.
	// Servers that join, and every server once the cluster is initialized, ignore
	// it. docs/etcd-snapshots.md has the procedure.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	RestoreFrom string `json:"restoreFrom,omitempty"`
}

// EtcdSnapshots are k3s's etcd snapshot options. Every field left empty keeps
// k3s's default.
type EtcdSnapshots struct {
	// schedule is when k3s takes a snapshot, a five-field cron expression
	// (k3s etcd-snapshot-schedule-cron), e.g. "0 */6 * * *". k3s's default: "0 */12 * * *".
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule,omitempty"`

	// retention is how many scheduled snapshots k3s keeps per server, on disk and
	// in S3 (k3s etcd-snapshot-retention). k3s's default: 5.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Retention *int32 `json:"retention,omitempty"`

	// directory is where each server keeps its snapshots (k3s etcd-snapshot-dir),
	// an absolute path. k3s's default: /var/lib/rancher/k3s/server/db/snapshots.
	// k3s creates only its default folder, so capk3s creates this one (mode 0700,
	// parents as needed) on each server before k3s starts; an existing folder, such
	// as a mount, is left as it is.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Directory string `json:"directory,omitempty"`

	// compress zips each snapshot (k3s etcd-snapshot-compress).
	// +optional
	Compress bool `json:"compress,omitempty"`

	// s3 uploads every snapshot to an S3-compatible bucket as well (k3s etcd-s3).
	// +optional
	S3 *EtcdSnapshotsS3 `json:"s3,omitempty"`
}

// EtcdSnapshotsS3 is where k3s uploads snapshots. The credentials and the endpoint's
// CA come from Secrets in the config's namespace, never from this object.
type EtcdSnapshotsS3 struct {
	// bucket is the bucket's name (k3s etcd-s3-bucket).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Bucket string `json:"bucket"`

	// endpoint is the S3 endpoint, a host with an optional port and no scheme
	// (k3s etcd-s3-endpoint). k3s's default: s3.amazonaws.com.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Endpoint string `json:"endpoint,omitempty"`

	// region is the bucket's region (k3s etcd-s3-region). k3s's default: us-east-1.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Region string `json:"region,omitempty"`

	// folder is the folder (key prefix) in the bucket (k3s etcd-s3-folder).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Folder string `json:"folder,omitempty"`

	// insecure talks plain HTTP to the endpoint (k3s etcd-s3-insecure).
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// skipSSLVerify does not verify the endpoint's certificate
	// (k3s etcd-s3-skip-ssl-verify).
	// +optional
	SkipSSLVerify bool `json:"skipSSLVerify,omitempty"`

	// endpointCASecret names the Secret key holding the PEM CA bundle that verifies
	// the endpoint's certificate, written to a file for k3s's etcd-s3-endpoint-ca.
	// +optional
	EndpointCASecret *SecretKeyReference `json:"endpointCASecret,omitempty"`

	// credentialsSecret names a Secret in the config's namespace with the S3 access
	// key ID under "etcd-s3-access-key" and the secret access key under
	// "etcd-s3-secret-key" (k3s's own names for them). They reach k3s through its
	// environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY in the 0600 file
	// /etc/default/k3s), never through config.yaml. Unset: k3s finds credentials
	// itself (an instance profile on AWS).
	// +optional
	CredentialsSecret *SecretReference `json:"credentialsSecret,omitempty"`
}

// The keys of an S3 credentials Secret (EtcdSnapshotsS3.CredentialsSecret).
const (
	EtcdS3AccessKeyIDKey     = "etcd-s3-access-key"
	EtcdS3SecretAccessKeyKey = "etcd-s3-secret-key"
)
