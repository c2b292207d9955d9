// Package supervisor is a client of the k3s supervisor's etcd snapshot API, the
// one `k3s etcd-snapshot save` uses: an HTTPS POST of a JSON request to
// /db/snapshot on a server's supervisor port, which k3s serves on the same port as
// the Kubernetes API (the control plane endpoint). The management cluster holds
// everything the call needs: the endpoint, the server CA that signs the
// supervisor's serving certificate, and the join token, whose passphrase is the
// password of k3s's "server" user (HTTP basic auth).
//
// Facts read from k3s's source (v1.34.9, v1.35.4 and v1.36.2 alike):
//   - pkg/etcd/snapshot_handler.go: the request is {operation, name, dir, compress,
//     retention, s3}; only POST is accepted; the answer of "save" is
//     managed.SnapshotResult {created, deleted} (pkg/cluster/managed/drivers.go).
//   - The request's s3 block replaces the server's own S3 settings for that request
//     (ETCD.withRequest copies sr.S3 into the config): a request without s3 uploads
//     nothing, even on a server configured with etcd-s3. Nothing of the block is
//     defaulted: the defaults (endpoint s3.amazonaws.com, region us-east-1, timeout
//     5m) live in the CLI's flags (pkg/cli/cmds/etcd_snapshot.go), which the CLI
//     sends. pkg/etcd/s3/s3.go GetClient builds the S3 client from the block as sent,
//     before any snapshot: minio.New refuses an empty endpoint ("Endpoint:  does not
//     follow ip address or domain name standards."), a zero timeout expires the
//     bucket check at once, and handleSave answers 400 "failed to initialize S3
//     client: ..." with nothing taken.
//   - The snapshot's folder is the request's dir alone: withRequest copies the
//     server's name, compression and retention but not its etcd-snapshot-dir, so a
//     request without dir saves into the default folder, <data-dir>/server/db/snapshots
//     (pkg/etcd/snapshot.go snapshotDir, which creates only that default folder).
//     The CLI sends dir and compress from the server's config.yaml
//     (pkg/cli/etcdsnapshot/etcd_snapshot.go commandSetup).
//   - pkg/etcd/snapshot.go: the snapshot is named "<name>-<node name>-<unix time>"
//     (".zip" appended when compressed); the CLI's default name is "on-demand".
//     A save that fails while writing the file still answers 200 with no created
//     name, and records the failure in an ETCDSnapshotFile; a failure before (a
//     learner answered, etcd unreachable, a save already running) answers 500
//     whose body names only an error ID, the details being in the server's log.
//   - pkg/util/apierrors.go: errors are metav1.Status bodies (401, 403, 400, 500).
//   - pkg/cli/etcdsnapshot/etcd_snapshot.go: "save" sends retention 0 (no pruning),
//     and waits two minutes plus the S3 timeout.
//   - pkg/clientaccess/token.go: a bare passphrase authenticates as
//     "server:<passphrase>" with basic auth (a passphrase shaped like a kubeadm
//     bootstrap token is sent as a bearer token instead; capk3s's tokens are not).
package supervisor
