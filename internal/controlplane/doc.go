// Package controlplane is the KThreesControlPlane reconciler. Each pass fetches the
// control plane and its Cluster, honours pausing, and then runs steps that return
// early when not done. Today the steps are the join token (internal/token); the
// certificates, kubeconfig and machine lifecycle steps join the same loop.
//
// What the servers need next is decided in the subpackage serverplan, from what a
// pass observed: whether to add or remove a server or wait (and why), which server
// goes and where a new one goes, whether a server is up to date, and whether an
// unhealthy server is remediated. This package reads what those decisions need and
// carries them out (rollout.go, scale.go, remediation.go).
//
// A restore of a running cluster (KThreesEtcdRestore) is decided in the subpackage
// restoreplan and carried out by the subpackage etcdrestore; this package holds off
// its server steps while a restore holds them (restore_hold.go) and shapes the
// restore's first server as every server is shaped (restore_server.go,
// desiredstate.go).
package controlplane
