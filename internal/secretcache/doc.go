// Package secretcache serves the cluster Secrets a controller reads on every pass (the
// CAs, the kubeconfig, the join token) from a cache of their own, so that an idle
// control plane reads none of them from the API server.
//
// The cache holds only Secrets labelled cluster.x-k8s.io/cluster-name, which CAPI's
// secret utilities and capk3s put on every Secret they make, so the manager does not
// keep every Secret of the management cluster in memory. A Secret missing from the
// cache (unlabelled, made by older software; or just created and not seen yet) is read
// live: a NotFound is only ever believed from the API server, because decisions that
// create a CA or a token are taken on NotFound and must not be taken on a lagging copy.
package secretcache
