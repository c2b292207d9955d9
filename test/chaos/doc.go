// Package chaos runs capk3s's managers as real processes and hurts them while
// clusters are created, upgraded, scaled and rolled out: managers are killed at random
// (SIGKILL), two replicas of each compete for their Lease, the management
// kube-apiserver restarts and a workload cluster's API goes silent. Checkers watch the
// whole time for what must never happen (etcd quorum lost, the join token changed, a
// second cluster-init server, too many servers, both replicas acting, secrets in logs)
// and every cluster must converge once the faults stop. The scenario is seeded: the
// seed is printed, and -chaos.seed or CAPK3S_CHAOS_SEED replays it.
package chaos
