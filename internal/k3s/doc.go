// Package k3s holds facts about k3s that both providers rely on: how its versions
// are written and compared, where it reads its files, which config options each role
// takes in each supported minor and of which type (flags.go over flags_generated.go,
// read from k3s's source by hack/k3sflags), the options capk3s manages itself
// (options.go), the node labels the kubelet refuses (nodelabels.go), the Node
// annotations through which its etcd controllers publish membership (etcd.go), a
// server's Node role label and default listen port (server.go), and
// which server options every server of an embedded-etcd cluster must share
// (critical.go). The simulator keeps its own picture of k3s (test/sim/k3smodel) and
// does not read these.
package k3s
