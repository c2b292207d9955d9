// Package move is the acceptance test of clusterctl move for capk3s: a running cluster
// on the simulated infrastructure is moved, with clusterctl's own library, from one
// management cluster (a real kube-apiserver and etcd running the whole stack) to
// another, and must keep working there: the same Machines, provider IDs, Nodes and
// etcd members, its Secrets (the join token with the same value, the CAs, the
// kubeconfig and a user Secret that its KThreesConfigSpec references and the user
// marked as the cluster's) moved along, a referenced Secret the user did not mark
// left in the source as it was, nothing else left behind, and the control plane
// still reconciling, scaled out on the target.
package move
