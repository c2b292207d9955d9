// Package k3s holds facts about k3s that both providers rely on: how its versions
// are written and compared, where it reads its files, the Node annotations through
// which its etcd controllers publish membership (etcd.go), and which config options each
// role takes (options.go, the one list the webhooks, the renderer and the simulator
// share).
package k3s
