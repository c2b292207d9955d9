package controlplane

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// ownWrites remembers, for each control plane, the resourceVersions that this
// process's last writing pass replaced. A pass that reads one of them from the cache
// would start from an object this controller has already rewritten: under load the
// informer can lag behind the controller's own writes, and such a pass repeats the
// last one's writes or, with the status write's precondition, ends in a conflict. It
// is skipped instead; the watch event of the write it lags behind brings the next pass
// (the control plane's own watch has no predicate, so every write of it wakes one).
//
// Only this process's writes are known, which is all a stale read of this kind is:
// another writer's change arrives through the same watch.
type ownWrites struct {
	mu       sync.Mutex
	replaced map[types.NamespacedName][]string
}

func newOwnWrites() *ownWrites {
	return &ownWrites{replaced: map[types.NamespacedName][]string{}}
}

// record notes the versions a pass's writes replaced; it forgets older passes' ones,
// which the cache, never going back, has passed anyway. A nil ownWrites records
// nothing (a Reconciler built without SetupWithManager, in unit tests).
func (w *ownWrites) record(key types.NamespacedName, replaced []string) {
	if w == nil || len(replaced) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.replaced[key] = slices.Clone(replaced)
}

// isReplaced reports whether resourceVersion is one that this process has written
// over.
func (w *ownWrites) isReplaced(key types.NamespacedName, resourceVersion string) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.replaced[key], resourceVersion)
}

// forget drops a control plane that is gone.
func (w *ownWrites) forget(key types.NamespacedName) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.replaced, key)
}
