// Package v1beta2 holds the real-k3s layer's infrastructure kinds: a NetnsMachine is a
// test machine made of a network namespace on a host bridge, a mount, PID and cgroup
// namespace, and an overlay of a Debian root, booted by the real cloud-init; a
// NetnsCluster is the load balancer in front of its servers. They are test-only
// kinds, as CAPD's are for Cluster API's own end-to-end tests.
// +kubebuilder:object:generate=true
// +groupName=infrastructure.netns.capk3s.io
package v1beta2
