// Package e2e runs capk3s end to end in one process: Cluster API's core reconcilers,
// both capk3s providers with their webhooks, the k3s simulator and the real garbage
// collector, against the test harness's kube-apiserver. Each scenario is a named test
// on its own cluster in its own namespace.
package e2e
