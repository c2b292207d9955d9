//go:build tools

// Package tools pins the source of the Kubernetes binaries that the tests run
// (kube-apiserver, kube-controller-manager). They are built from source because
// this project's machines cannot download prebuilt binaries.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
