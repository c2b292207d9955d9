package k3smodel

import (
	"errors"
	"fmt"
	"net/http"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The supervisor's etcd snapshot API: `k3s etcd-snapshot save|list|prune|delete`
// POSTs a SnapshotRequest as JSON to SnapshotPath on a server's supervisor URL, the
// port the apiserver shares (pkg/cli/etcdsnapshot/etcd_snapshot.go, pkg/etcd/etcd.go
// handler, pkg/etcd/snapshot_handler.go; the same in v1.34.9, v1.35.4 and v1.36.2).
const (
	SnapshotPath = "/db/snapshot"
	// SupervisorUser is the user the CLI authenticates as, with the server token's
	// password (clientaccess.WithUser("server")); k3s writes it into its password
	// file with the group ServerRole (pkg/daemons/control/deps/deps.go genUsers).
	SupervisorUser = "server"
	// ServerRole is the group /db/snapshot requires (auth.HasRole(version.Program+":server")).
	ServerRole = "k3s:server"
	// AgentUser is the password file's other user, with the agent token's password
	// and the group AgentRole (genUsers): authenticated, but not allowed snapshots.
	AgentUser = "node"
	AgentRole = "k3s:agent"
)

// Snapshot operations (pkg/etcd/snapshot_handler.go SnapshotOperation).
const (
	SnapshotSave   = "save"
	SnapshotList   = "list"
	SnapshotPrune  = "prune"
	SnapshotDelete = "delete"
)

// Snapshot name prefixes: the server's etcd-snapshot-name default, for scheduled
// snapshots (pkg/cli/cmds/server.go), and the CLI's default for `k3s etcd-snapshot
// save`, sent as the request's name (pkg/cli/cmds/etcd_snapshot.go).
const (
	DefaultSnapshotName  = "etcd-snapshot"
	OnDemandSnapshotName = "on-demand"
)

// SnapshotRequest is the body of a POST to SnapshotPath (pkg/etcd/snapshot_handler.go).
// Pointers are "not given": the answering server's own setting holds.
type SnapshotRequest struct {
	Operation string   `json:"operation"`
	Name      []string `json:"name,omitempty"`
	Dir       *string  `json:"dir,omitempty"`
	Compress  *bool    `json:"compress,omitempty"`
	Retention *int     `json:"retention,omitempty"`
	S3        *EtcdS3  `json:"s3,omitempty"`
}

// EtcdS3 is the request's S3 settings (pkg/daemons/config/types.go EtcdS3), the
// fields the simulator reads and the credentials a caller sends.
type EtcdS3 struct {
	AccessKey    string `json:"accessKey,omitempty"`
	Bucket       string `json:"bucket,omitempty"`
	ConfigSecret string `json:"configSecret,omitempty"`
	Endpoint     string `json:"endpoint,omitempty"`
	EndpointCA   string `json:"endpointCA,omitempty"`
	Folder       string `json:"folder,omitempty"`
	Region       string `json:"region,omitempty"`
	SecretKey    string `json:"secretKey,omitempty"`
	Insecure     bool   `json:"insecure,omitempty"`
	Retention    int    `json:"retention,omitempty"`
	// Timeout bounds each S3 call, the bucket check first; the CLI sends its
	// etcd-s3-timeout (default 5m).
	Timeout metav1.Duration `json:"timeout,omitzero"`
}

// emptyEndpointError is minio-go's error for an empty endpoint, word for word as k3s
// passes it on (capitalized and with its full stop).
const emptyEndpointError = "Endpoint:  does not follow ip address or domain name standards."

// S3ClientError is why the answering server cannot make the request's S3 client, or
// nil (pkg/etcd/s3/s3.go GetClient; v1.34.9, v1.35.4, v1.36.2). k3s then answers the
// save 400 "failed to initialize S3 client: <error>" and takes no snapshot at all
// (snapshot_handler.go handleSave). Nothing defaults the request's settings
// (withRequest sets EtcdS3 to the request's block as sent; the defaults live in the
// CLI's flags, pkg/cli/cmds/etcd_snapshot.go): a bucket must be named; an empty
// endpoint is refused by minio.New, which GetClient calls with the request's
// endpoint (minio-go's getEndpointURL: "Endpoint:  does not follow ip address or
// domain name standards."); a zero timeout expires the bucket check at once; the
// check runs with the request's credentials only (static keys, else ~/.aws or IAM
// on the server, which the simulator takes as absent), so without keys a bucket
// that needs them answers Access Denied — the simulator's buckets all do (an
// assumption: an S3 that allows anonymous access would not). A config secret is
// not played.
func S3ClientError(s3 *EtcdS3) error {
	switch {
	case s3.ConfigSecret != "":
		return errors.New("the simulator does not play etcd-s3-config-secret")
	case s3.Bucket == "":
		return errors.New("s3 bucket name was not set")
	case s3.Endpoint == "":
		return errors.New(emptyEndpointError) //nolint:staticcheck // k3s's message, word for word
	case s3.Timeout.Duration <= 0:
		return fmt.Errorf("failed to test for existence of bucket %s: context deadline exceeded", s3.Bucket)
	case s3.AccessKey == "" || s3.SecretKey == "":
		// S3's message is "Access Denied."; the full stop is left off here.
		return fmt.Errorf("failed to test for existence of bucket %s: Access Denied", s3.Bucket)
	}
	return nil
}

// SnapshotResult is the answer to save, prune and delete: the snapshot names created
// (the local file's, then the S3 copy's, which is the same name) and deleted
// (pkg/cluster/managed/drivers.go).
type SnapshotResult struct {
	Created []string `json:"created,omitempty"`
	Deleted []string `json:"deleted,omitempty"`
}

// SnapshotSettings are what one save uses, after the request is laid over the
// answering server's own settings (pkg/etcd/snapshot_handler.go withRequest;
// v1.34.9, v1.35.4, v1.36.2): the request's name and compress win when given, else
// the server's; the folder is the request's dir ALONE — withRequest copies no
// etcd-snapshot-dir of the server's, so a request without dir saves into k3s's
// default folder (pkg/etcd/snapshot.go snapshotDir: <data-dir>/server/db/snapshots)
// even on a server whose config.yaml names another; S3 is the request's alone too
// — a request without s3 uploads nothing even from a server whose config.yaml has
// etcd-s3. The CLI sends dir, compress and the S3 settings from the node's own
// config.yaml (pkg/cli/etcdsnapshot/etcd_snapshot.go commandSetup), so on a node the
// two agree; a remote caller must send them.
type SnapshotSettings struct {
	Name     string
	Dir      string
	Compress bool
	S3       *EtcdS3
}

// SaveSettings lays a save request over a server's settings; the server's Dir is
// not used (see SnapshotSettings).
func SaveSettings(r SnapshotRequest, server SnapshotSettings) SnapshotSettings {
	out := server
	if len(r.Name) > 0 {
		out.Name = r.Name[0]
	}
	if out.Name == "" {
		out.Name = DefaultSnapshotName
	}
	out.Dir = DefaultSnapshotDir
	if r.Dir != nil && *r.Dir != "" {
		out.Dir = *r.Dir
	}
	if r.Compress != nil {
		out.Compress = *r.Compress
	}
	out.S3 = r.S3
	return out
}

// Caller is what the supervisor learnt of a request's credentials.
type Caller struct {
	// Basic is set when the request has HTTP basic credentials.
	Basic          bool
	User, Password string
	// Cert is set when the request presented a client certificate; CertValid when
	// the cluster's client CA signed it. Groups are its organizations.
	Cert, CertValid bool
	Groups          []string
}

// AuthorizeSnapshot is the supervisor's rule for SnapshotPath (pkg/server/auth/auth.go
// doAuth over pkg/authenticator: basic auth against k3s's password file, then client
// certificates of the client CA, as one union; v1.36.2, the route's HasRole the same
// in v1.34.9 and v1.35.4): a wrong password, an unknown user or
// a certificate the client CA did not sign is an authentication error, 401 "not
// authorized"; no credentials, or an identity without ServerRole, 403 "forbidden".
// serverPass and agentPass are the server and agent tokens' passwords. 0 means
// allowed.
func AuthorizeSnapshot(c Caller, serverPass, agentPass string) (int, string) {
	var groups []string
	authenticated, failed := false, false
	if c.Basic {
		switch {
		case c.User == SupervisorUser && c.Password == serverPass && serverPass != "":
			authenticated, groups = true, []string{ServerRole}
		case c.User == AgentUser && c.Password == agentPass && agentPass != "":
			authenticated, groups = true, []string{AgentRole}
		default:
			failed = true
		}
	}
	if !authenticated && c.Cert {
		if c.CertValid {
			authenticated, groups = true, c.Groups
		} else {
			failed = true
		}
	}
	switch {
	case !authenticated && failed:
		return http.StatusUnauthorized, "not authorized"
	case !authenticated || !slices.Contains(groups, ServerRole):
		return http.StatusForbidden, "forbidden"
	}
	return 0, ""
}
