// Package etcdsnapshot is the KThreesEtcdSnapshot reconciler: it takes one etcd
// snapshot of a cluster's embedded etcd through k3s's supervisor API at the control
// plane endpoint (internal/k3s/supervisor), as `k3s etcd-snapshot save` does, with
// what the management cluster holds already: the endpoint, the server CA Secret and
// the join token. Nothing runs on the machines.
//
// One object is one request, never repeated:
//   - Pending: the checks (embedded etcd, control plane initialized, S3 settings
//     when S3 is asked for) and the credentials. A refusal is final (Failed).
//   - Running is written, with the name sent to k3s (status.requestedName, which
//     carries eight characters of the object's UID, so no other snapshot has it)
//     and the start time, BEFORE the request, with an optimistic lock, so that a
//     pass reading an older copy of the object cannot send a second request.
//   - The request: k3s answers with the names it wrote, refuses (401, 403, 500:
//     Failed with k3s's words), or the answer is lost (timeout, the manager
//     stopped). A request that was never written (no connection, TLS refused) took
//     no snapshot: the object goes back to Pending and is retried until
//     UnreachableTimeout after its creation.
//   - Running with a requested name is resolved from k3s's ETCDSnapshotFile
//     records on the workload cluster, whose snapshot names start with it: that is
//     how a manager that restarted after sending the request finds the result, and
//     how the result is linked to the records (status.snapshot.etcdSnapshotFiles).
//     No record within ResultTimeout of the start: Failed, ResultUnknown.
//
// The request is synchronous and may last minutes (k3s's own CLI waits two minutes
// plus the S3 timeout); a snapshot is rare, and the worker it holds is one of the
// manager's pool of this controller only.
//
// S3: k3s uses the request's S3 settings instead of the server's own for an
// on-demand snapshot (pkg/etcd/snapshot_handler.go withRequest), so the request
// carries the control plane's serverConfig.etcd.snapshots.s3, with the keys from
// its credentialsSecret and the endpoint CA at the path where the bootstrap data
// writes it on every server.
package etcdsnapshot
