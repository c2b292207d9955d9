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
//   - The request: k3s answers with the names it wrote, refuses (401, 403, 400,
//     500: Failed with k3s's words), or the answer is lost (timeout, the manager
//     stopped). A request that was never written (no connection within the
//     client's 10-second connect and handshake bounds, TLS refused) took no
//     snapshot: the object goes back to Pending and is retried until
//     UnreachableTimeout after its creation.
//   - Running with a requested name is resolved from k3s's ETCDSnapshotFile
//     records on the workload cluster, whose snapshot names start with it: that is
//     how a manager that restarted after sending the request finds the result, and
//     how the result is linked to the records (status.snapshot.etcdSnapshotFiles).
//     No record within ResultTimeout of the start: Failed, ResultUnknown.
//
// The request may last minutes (k3s's own CLI waits two minutes plus the S3
// timeout), so it never runs on a worker: it runs in a goroutine of its own
// (inflight.go), at most one per object, and its answer wakes the object through a
// channel source; a pass meanwhile only notes that it is out. One cluster's
// unreachable or slow supervisor thus delays no other cluster's snapshot, nor the
// rollouts waiting for one. The answer lives in this process only: after a
// restart, the records decide, as for a lost answer.
//
// The request carries what `k3s etcd-snapshot save` on a server would send,
// because k3s takes the request's settings as they are (pkg/etcd/snapshot_handler.go
// withRequest): the folder (dir) and compression of serverConfig.etcd.snapshots, and
// for S3 the control plane's serverConfig.etcd.snapshots.s3 with k3s's defaults
// where it leaves them empty (endpoint, region, timeout), the keys from its
// credentialsSecret and the endpoint CA at the path where the bootstrap data writes
// it on every server (request.go builds every request's S3 block).
package etcdsnapshot
