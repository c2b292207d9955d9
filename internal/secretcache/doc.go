// Package secretcache serves the cluster Secrets a controller reads on every pass (the
// CAs, the kubeconfig, the join token) from a cache of their own, so that an idle
// control plane reads none of them from the API server.
//
// The cache holds only Secrets labelled cluster.x-k8s.io/cluster-name, which CAPI's
// secret utilities and capk3s put on every Secret they make, so the manager does not
// keep every Secret of the management cluster in memory. Of those it keeps the data
// only of the ones its controller reads, named <cluster>-<purpose> for the purposes
// the controller gives (its CAs, join token, kubeconfig); every other one (each
// machine's bootstrap data, with its CA keys and token; the user's labelled Secrets)
// is held by its metadata alone, and read live if asked for. A Secret missing from the
// cache (unlabelled, made by older software; or just created and not seen yet) is read
// live: a NotFound is only ever believed from the API server, because decisions that
// create a CA or a token are taken on NotFound and must not be taken on a lagging copy.
//
// A new cluster has none of its Secrets yet, so each of them misses and Get would read
// each live. A controller pass reads through ForPass instead: the pass's first miss
// lists the cluster's labelled Secrets live (as authoritative as a live read), and its
// later misses are answered from that list. What the list cannot hold, a Secret
// without the cluster's label, is told apart by a metadata-only informer of all
// Secrets that the controller runs anyway (WithSecretMetadata): seen there, it is read
// live; not seen, it does not exist, or was created so recently that even the informer
// has not seen it, and a create of it then fails with AlreadyExists: nothing is
// overwritten, and a later pass finds it.
package secretcache
