// Package controlplane is the KThreesControlPlane reconciler. Each pass fetches the
// control plane and its Cluster, honours pausing, and then runs steps that return
// early when not done. Today the steps are the join token (internal/token); the
// certificates, kubeconfig and machine lifecycle steps join the same loop.
package controlplane
