// Package stack runs, in one controller-runtime manager, everything a management
// cluster of capk3s runs: Cluster API's core reconcilers, both capk3s providers and
// their webhooks, and the simulated infrastructure. The end-to-end tests and the
// sandbox use it.
package stack
