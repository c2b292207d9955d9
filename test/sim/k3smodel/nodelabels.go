package k3smodel

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// k3s hands every node-label to the kubelet unchanged, as one --node-labels flag
// (pkg/daemons/agent/agent_linux.go, `argsMap["node-labels"] = strings.Join(cfg.NodeLabels,
// ",")`, v1.34.9, v1.35.4, v1.36.2), so the kubelet's own check of --node-labels decides:
// Kubernetes' cmd/kubelet/app/options/options.go ValidateKubeletFlags refuses a key in
// the kubernetes.io or k8s.io namespaces (or a subdomain of them) unless it is in
// the kubelet's allowed set or under kubelet.kubernetes.io / node.kubernetes.io
// (k8s.io/kubelet pkg/apis/well_known_labels.go), and any key or value that is not a
// valid label. The kubelet then does not start; k3s runs it in-process and shuts down
// with "kubelet exited" (pkg/executor/embed/embed.go), so the machine never becomes a
// Node. Read from Kubernetes v1.37.2's source (the version in this module cache); the
// rule has been the same since Kubernetes v1.16, which is the assumption for v1.34-v1.36.

// kubeletAllowedLabels are the kubernetes.io labels a kubelet may set on its own Node.
var kubeletAllowedLabels = []string{
	"kubernetes.io/hostname",
	"topology.kubernetes.io/zone",
	"topology.kubernetes.io/region",
	"failure-domain.beta.kubernetes.io/zone",
	"failure-domain.beta.kubernetes.io/region",
	"beta.kubernetes.io/instance-type",
	"node.kubernetes.io/instance-type",
	"kubernetes.io/os",
	"kubernetes.io/arch",
	"beta.kubernetes.io/os",
	"beta.kubernetes.io/arch",
}

// kubeletLabelNamespaces are the namespaces (and their subdomains) a kubelet may label.
var kubeletLabelNamespaces = []string{"kubelet.kubernetes.io", "node.kubernetes.io"}

// CheckNodeLabels is the kubelet's check of k3s's node-label values ("key=value" or
// "key"). An error is a kubelet (and so a k3s) that does not start.
func CheckNodeLabels(role string, labels []string) error {
	var refused []string
	for _, l := range labels {
		// The kubelet reads --node-labels as a comma separated list of key=value.
		for _, kv := range strings.Split(l, ",") {
			k, v, _ := strings.Cut(kv, "=")
			if reservedLabel(k) {
				refused = append(refused, k)
				continue
			}
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				return &ExitError{Role: role, Reason: fmt.Sprintf("kubelet exited: invalid node labels: '%s' - %s", k, strings.Join(errs, ", "))}
			}
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				return &ExitError{Role: role, Reason: fmt.Sprintf("kubelet exited: invalid node labels: '%s' - %s", v, strings.Join(errs, ", "))}
			}
		}
	}
	if len(refused) > 0 {
		slices.Sort(refused)
		return &ExitError{Role: role, Reason: fmt.Sprintf("kubelet exited: unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: %v", refused)}
	}
	return nil
}

func reservedLabel(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	inNamespace := func(ns, parent string) bool { return ns == parent || strings.HasSuffix(ns, "."+parent) }
	if !inNamespace(ns, "kubernetes.io") && !inNamespace(ns, "k8s.io") {
		return false
	}
	if slices.Contains(kubeletAllowedLabels, key) {
		return false
	}
	for _, allowed := range kubeletLabelNamespaces {
		if inNamespace(ns, allowed) {
			return false
		}
	}
	return true
}
