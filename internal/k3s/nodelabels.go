package k3s

import (
	"slices"
	"strings"

	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// ReservedNodeLabels are the keys among node-label values ("key=value") the kubelet
// refuses to start with. k3s passes node-label to the kubelet's --node-labels as it is
// (k3s pkg/daemons/agent/agent_linux.go), and the kubelet refuses keys in the
// kubernetes.io and k8s.io namespaces (and their subdomains) except the ones it sets
// itself (k8s.io/kubelet's IsKubeletLabel: kubelet.kubernetes.io, node.kubernetes.io,
// hostname, zone, region, instance type, os, arch) — Kubernetes'
// cmd/kubelet/app/options ValidateKubeletFlags. node-role.kubernetes.io/* is the usual
// victim: such labels are for something with API access to set (CAPI's Machine labels
// in node-role.kubernetes.io are not synced either; use node.cluster.x-k8s.io).
func ReservedNodeLabels(labels []string) []string {
	var out []string
	for _, l := range labels {
		for _, kv := range strings.Split(l, ",") {
			k, _, _ := strings.Cut(kv, "=")
			if kubernetesNamespace(k) && !kubeletapis.IsKubeletLabel(k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// kubernetesNamespace says whether a label key is in kubernetes.io or k8s.io, or a
// subdomain of either (the kubelet's isKubernetesLabel).
func kubernetesNamespace(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, d := range []string{"kubernetes.io", "k8s.io"} {
		if ns == d || strings.HasSuffix(ns, "."+d) {
			return true
		}
	}
	return false
}
