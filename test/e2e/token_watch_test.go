package e2e

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// tokenWatch follows a cluster's token Secret for a whole scenario and records
// every deletion, replacement or change of its value: a rollout must never touch it.
type tokenWatch struct {
	mu       sync.Mutex
	uid      types.UID
	value    []byte
	problems []string
}

func watchToken(t *testing.T, namespace, cluster string) *tokenWatch {
	t.Helper()
	clientset, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	name := cluster + "-token"
	factory := informers.NewSharedInformerFactoryWithOptions(clientset, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
	w := &tokenWatch{}
	_, err = factory.Core().V1().Secrets().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.seen(obj) },
		UpdateFunc: func(_, obj any) { w.seen(obj) },
		DeleteFunc: func(any) { w.problem("the token Secret was deleted") },
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() { close(stop); factory.Shutdown() })
	return w
}

func (w *tokenWatch) seen(obj any) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.uid == "":
		w.uid, w.value = s.UID, bytes.Clone(s.Data["value"])
	case s.UID != w.uid:
		w.problems = append(w.problems, fmt.Sprintf("the token Secret was replaced (uid %s, then %s)", w.uid, s.UID))
	case !bytes.Equal(s.Data["value"], w.value):
		w.problems = append(w.problems, "the token's value changed")
	}
}

func (w *tokenWatch) problem(p string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.problems = append(w.problems, p)
}

// check fails the test if the token was ever deleted, replaced or changed, or never seen.
func (w *tokenWatch) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.uid == "" {
		t.Error("the token Secret was never seen")
	}
	for _, p := range w.problems {
		t.Error(p)
	}
}
