// Package k3s holds facts about k3s that both providers rely on: how its versions
// are written and compared, where it reads its files, and which config options each
// role takes (options.go, the one list the webhooks, the renderer and the simulator
// share), and which server options every server of an embedded-etcd cluster must
// share (critical.go).
package k3s
