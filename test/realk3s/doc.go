// Package realk3s is capk3s's end-to-end layer on real k3s: every machine runs the
// k3s binary the layer is given, installed by k3s's own install.sh from capk3s's
// bootstrap data, which the real cloud-init runs on first boot. CAPI core and both
// capk3s providers run as in test/e2e (test/stack); the infrastructure is
// test/realk3s/provider's NetnsMachines (test/realk3s/host).
//
// The layer runs only when given a k3s binary and its install script:
//
//	make test-k3s K3S_BIN=/path/to/k3s K3S_INSTALL_SH=/path/to/install.sh [K3S_BIN_UPGRADE=/path/to/newer/k3s]
//
// and stays out of `make test`, where its tests skip. It needs root (namespaces,
// mounts, a bridge) and the machine to itself: real k3s servers lose etcd elections
// on a loaded host.
package realk3s
