package runtimehooks

import (
	"slices"
	"strings"

	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CAPI keeps the hooks it is to call for an object in the object's pending-hooks
// annotation, a comma-separated list of hook names, and its helpers for it are
// internal to CAPI; these read and write the same list.

// PendingHooks is the list in obj's pending-hooks annotation.
func PendingHooks(obj client.Object) []string {
	var out []string
	for h := range strings.SplitSeq(obj.GetAnnotations()[runtimev1.PendingHooksAnnotation], ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// IsPending says whether hook is in obj's pending-hooks annotation.
func IsPending(hook runtimecatalog.Hook, obj client.Object) bool {
	return slices.Contains(PendingHooks(obj), runtimecatalog.HookName(hook))
}

// MarkPending adds hook to obj's pending-hooks annotation, keeping the others; obj is
// changed in memory only.
func MarkPending(hook runtimecatalog.Hook, obj client.Object) {
	hooks, name := PendingHooks(obj), runtimecatalog.HookName(hook)
	if slices.Contains(hooks, name) {
		return
	}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[runtimev1.PendingHooksAnnotation] = strings.Join(append(hooks, name), ",")
	obj.SetAnnotations(annotations)
}
