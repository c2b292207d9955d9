package pacing

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// calls counts the calls controller-runtime makes, paced answers included.
type calls struct {
	mu   sync.Mutex
	n    int
	next reconcile.Reconciler
}

func (c *calls) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.next.Reconcile(ctx, req)
}

func (c *calls) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// startController runs a controller-runtime controller built as SetupWithManager
// builds one, with Wrap, and returns its queue.
func startController(t *testing.T, inner reconcile.Reconciler, interval time.Duration) (*calls, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	t.Helper()
	paced, opts := Wrap(inner, interval, controller.Options{MaxConcurrentReconciles: 2})
	outer := &calls{next: paced}
	opts.Reconciler = outer
	opts.SkipNameValidation = ptr.To(true)
	opts.Logger = logr.Discard()
	c, err := controller.NewUnmanaged("pacing-test", opts)
	if err != nil {
		t.Fatal(err)
	}
	queues := make(chan workqueue.TypedRateLimitingInterface[reconcile.Request], 1)
	if err := c.Watch(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		queues <- q
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case q := <-queues:
		return outer, q
	case <-time.After(30 * time.Second):
		t.Fatal("the controller did not start its source")
		return nil, nil
	}
}

// eventually waits (without a deadline that matters on a busy machine) for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// In a real controller, a request that comes back within the interval is answered
// without a pass, and its requeue does not bring a pass before the interval is over.
func TestInAControllerASecondRequestWithinTheIntervalRunsNoPass(t *testing.T) {
	inner := &counting{}
	outer, queue := startController(t, inner, time.Hour)
	req := request("a")

	queue.Add(req)
	eventually(t, "the first pass", func() bool { return inner.count(req) == 1 })
	queue.Add(req)
	eventually(t, "the second request", func() bool { return outer.count() == 2 })
	if n := inner.count(req); n != 1 {
		t.Fatalf("%d passes, want 1", n)
	}
}

// In a real controller, the paced answer's requeue brings the pass once the interval
// is over.
func TestInAControllerThePacedRequestRunsLater(t *testing.T) {
	inner := &counting{}
	_, queue := startController(t, inner, 100*time.Millisecond)
	req := request("a")

	queue.Add(req)
	eventually(t, "the first pass", func() bool { return inner.count(req) == 1 })
	queue.Add(req)
	eventually(t, "the paced pass", func() bool { return inner.count(req) == 2 })
}
