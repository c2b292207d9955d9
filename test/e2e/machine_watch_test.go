package e2e

import (
	"context"
	"sort"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// deletionWatch records every server Machine of a namespace that starts being deleted
// or is deleted while it is armed: where a scenario must show that nothing is
// deleted, a poll could miss a deletion that begins and ends between two looks.
type deletionWatch struct {
	mu      sync.Mutex
	armed   bool
	deleted sets.Set[string]
}

func watchServerDeletions(t *testing.T, namespace string) *deletionWatch {
	t.Helper()
	c, err := cache.New(env.Config, cache.Options{
		Scheme:            env.Client.Scheme(),
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	informer, err := c.GetInformer(ctx, &clusterv1.Machine{})
	if err != nil {
		t.Fatal(err)
	}
	w := &deletionWatch{deleted: sets.New[string]()}
	_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if m, ok := obj.(*clusterv1.Machine); ok && !m.DeletionTimestamp.IsZero() {
				w.saw(m)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if m, ok := obj.(*clusterv1.Machine); ok {
				w.saw(m)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the Machine watch never synced")
	}
	return w
}

func (w *deletionWatch) saw(m *clusterv1.Machine) {
	if _, ok := m.Labels[clusterv1.MachineControlPlaneLabel]; !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.armed {
		w.deleted.Insert(client.ObjectKeyFromObject(m).Name)
	}
}

// arm starts recording; deletions before are none of its business.
func (w *deletionWatch) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = true
}

// seen lists the server Machines deleted since arm, sorted.
func (w *deletionWatch) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	names := w.deleted.UnsortedList()
	sort.Strings(names)
	return names
}
