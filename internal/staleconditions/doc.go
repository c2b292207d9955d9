// Package staleconditions removes, from an object capk3s takes over, the status
// conditions left by software on Cluster API's v1beta1 contract (cluster-api-k3s):
// condition types capk3s never sets, which would otherwise stay forever, and
// conditions without a reason, which the v1beta1 contract allowed but no v1beta2
// condition may have. The apiserver validates the whole condition list on every
// status write, so a single such condition makes each of capk3s's status patches
// invalid, including the one that reports Paused.
package staleconditions
