// Package etcdrestore is the KThreesEtcdRestore controller: it restores a running
// cluster's control plane to an etcd snapshot in S3 by re-provisioning its servers.
// Each pass reads the world afresh (the Cluster, its KThreesControlPlane, the server
// Machines read live, the snapshot), asks package restoreplan what to do, writes the
// restore's status first and then acts: it deletes the old servers (with nothing in
// their deletion waiting on the workload API their etcd goes down with), creates the
// one server that restores the snapshot (controlplane.CreateRestoreServer, shaped in
// the control plane's desiredstate.go), and lets the control plane join the rest. It
// never writes the cluster's token, CA or kubeconfig Secrets.
package etcdrestore
