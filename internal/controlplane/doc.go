// Package controlplane is the KThreesControlPlane reconciler. Each pass fetches the
// control plane and its Cluster, honours pausing, and then runs steps that return
// early when not done. Today the steps are the join token (internal/token); the
// certificates, kubeconfig and machine lifecycle steps join the same loop.
//
// A restore of a running cluster (KThreesEtcdRestore) is decided in the subpackage
// restoreplan and carried out by the subpackage etcdrestore; this package holds off
// its server steps while a restore holds them (restore_hold.go) and shapes the
// restore's first server as every server is shaped (restore_server.go,
// desiredstate.go).
package controlplane
