// Package envtest is the integration-test harness: a real kube-apiserver and etcd
// (built from source by hack/ensure-tools.sh), with Cluster API's core CRDs, CAPI's
// generic test-provider CRDs and capk3s's own CRDs installed, and optionally a real
// kube-controller-manager that runs only the garbage collector, so that tests about
// ownership and deletion observe what a real cluster does.
//
// Start one Environment per test package (RunMain in TestMain); each costs seconds
// and half a gigabyte, so tests share it and isolate themselves by namespace.
package envtest
