package pacing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const interval = time.Second

// counting is an inner reconciler that counts its passes per request and answers
// with result and err.
type counting struct {
	mu     sync.Mutex
	passes map[reconcile.Request]int
	result reconcile.Result
	err    error
}

func (c *counting) Reconcile(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.passes == nil {
		c.passes = map[reconcile.Request]int{}
	}
	c.passes[req]++
	return c.result, c.err
}

func (c *counting) count(req reconcile.Request) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.passes[req]
}

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time       { return c.t }
func (c *fakeClock) step(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock            { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

// paced wraps inner with a fake clock and the default rate limiter, as Wrap does.
func paced(inner reconcile.Reconciler, clock *fakeClock) (*pacer, *failureMemory) {
	failures := &failureMemory{TypedRateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](defaultBaseDelay, defaultMaxDelay)}
	return newPacer(inner, interval, clock.now, failures), failures
}

func TestWrapWithoutIntervalChangesNothing(t *testing.T) {
	inner := &counting{}
	limiter := workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()
	for _, d := range []time.Duration{0, -time.Second} {
		r, opts := Wrap(inner, d, controller.Options{MaxConcurrentReconciles: 3, RateLimiter: limiter})
		if r != reconcile.Reconciler(inner) {
			t.Errorf("interval %s: got %T, want the inner reconciler itself", d, r)
		}
		if opts.MaxConcurrentReconciles != 3 || opts.RateLimiter != limiter {
			t.Errorf("interval %s: options changed: %+v", d, opts)
		}
	}
}

func TestWrapPacesAndWrapsTheRateLimiter(t *testing.T) {
	inner := &counting{}
	r, opts := Wrap(inner, time.Hour, controller.Options{MaxConcurrentReconciles: 3})
	if _, ok := r.(*pacer); !ok {
		t.Fatalf("got %T, want a pacer", r)
	}
	if _, ok := opts.RateLimiter.(*failureMemory); !ok || opts.MaxConcurrentReconciles != 3 {
		t.Fatalf("options: rate limiter %T, concurrency %d; want a failureMemory and 3", opts.RateLimiter, opts.MaxConcurrentReconciles)
	}
	req := request("a")
	for range 3 {
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if n := inner.count(req); n != 1 {
		t.Fatalf("three requests within the interval ran %d passes, want 1", n)
	}

	// A rate limiter of the caller's is kept, under the wrapper.
	own := workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()
	_, opts = Wrap(inner, time.Hour, controller.Options{RateLimiter: own})
	if f, ok := opts.RateLimiter.(*failureMemory); !ok || f.TypedRateLimiter != own {
		t.Fatalf("the caller's rate limiter was not kept under the wrapper: %#v", opts.RateLimiter)
	}
}

func TestRequestsWithinTheIntervalAreRequeuedForTheRest(t *testing.T) {
	clock := newFakeClock()
	inner := &counting{}
	p, _ := paced(inner, clock)
	req := request("a")
	ctx := context.Background()

	steps := []struct {
		advance    time.Duration
		wantPasses int
		// wantRequeue is the RequeueAfter of the answer; 0 for a pass (inner's result).
		wantRequeue time.Duration
	}{
		{0, 1, 0},        // the first request runs
		{0, 1, interval}, // at once again: the whole interval to wait
		{400 * time.Millisecond, 1, 600 * time.Millisecond},
		{599 * time.Millisecond, 1, time.Millisecond},
		{time.Millisecond, 2, 0},                            // exactly one interval after the first pass started
		{100 * time.Millisecond, 2, 900 * time.Millisecond}, // measured from the second pass
		{5 * time.Second, 3, 0},                             // long after: runs
	}
	for i, s := range steps {
		clock.step(s.advance)
		res, err := p.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := inner.count(req); got != s.wantPasses {
			t.Errorf("step %d: %d passes, want %d", i, got, s.wantPasses)
		}
		if res.RequeueAfter != s.wantRequeue {
			t.Errorf("step %d: RequeueAfter %s, want %s", i, res.RequeueAfter, s.wantRequeue)
		}
	}
}

func TestRequestsArePacedEachOnItsOwn(t *testing.T) {
	clock := newFakeClock()
	inner := &counting{}
	p, _ := paced(inner, clock)
	a, b := request("a"), request("b")
	ctx := context.Background()

	_, _ = p.Reconcile(ctx, a)
	clock.step(300 * time.Millisecond)
	if res, _ := p.Reconcile(ctx, b); res.RequeueAfter != 0 || inner.count(b) != 1 {
		t.Fatalf("b was held back by a's pass: %+v, %d passes", res, inner.count(b))
	}
	if res, _ := p.Reconcile(ctx, a); res.RequeueAfter != 700*time.Millisecond || inner.count(a) != 1 {
		t.Fatalf("a: %+v after %d passes, want a requeue after 700ms and 1 pass", res, inner.count(a))
	}
}

func TestTheInnerResultAndErrorPassThrough(t *testing.T) {
	clock := newFakeClock()
	boom := errors.New("boom")
	inner := &counting{result: reconcile.Result{RequeueAfter: 10 * time.Second}, err: boom}
	p, _ := paced(inner, clock)
	res, err := p.Reconcile(context.Background(), request("a"))
	if !errors.Is(err, boom) || res.RequeueAfter != 10*time.Second {
		t.Fatalf("got %+v, %v; want the inner result and error", res, err)
	}

	// A requeue asked for sooner than the interval comes back, and is paced.
	inner.err = nil
	inner.result = reconcile.Result{RequeueAfter: 100 * time.Millisecond}
	clock.step(interval)
	if res, _ := p.Reconcile(context.Background(), request("a")); res.RequeueAfter != 100*time.Millisecond {
		t.Fatalf("got %+v, want the inner RequeueAfter of 100ms", res)
	}
	clock.step(100 * time.Millisecond)
	if res, _ := p.Reconcile(context.Background(), request("a")); res.RequeueAfter != 900*time.Millisecond || inner.count(request("a")) != 2 {
		t.Fatalf("got %+v after %d passes, want a paced requeue after 900ms and 2 passes", res, inner.count(request("a")))
	}
}

// The queue forgets an item's failures after every answer without an error; with
// pacing, only a pass of the inner reconciler that succeeded does.
func TestFailuresAreForgottenOnlyWhenAPassSucceeds(t *testing.T) {
	clock := newFakeClock()
	inner := &counting{err: errors.New("boom")}
	p, failures := paced(inner, clock)
	req := request("a")
	ctx := context.Background()

	_, _ = p.Reconcile(ctx, req)
	// The queue's back-off after the error, then the paced answer and its Forget.
	failures.When(req)
	if res, _ := p.Reconcile(ctx, req); res.RequeueAfter == 0 {
		t.Fatalf("the retry within the interval was not paced: %+v", res)
	}
	failures.Forget(req)
	if n := failures.NumRequeues(req); n != 1 {
		t.Fatalf("the queue's Forget after a paced answer dropped the failures: %d, want 1", n)
	}

	clock.step(interval)
	_, _ = p.Reconcile(ctx, req) // fails again
	if d := failures.When(req); d != 2*defaultBaseDelay {
		t.Fatalf("back-off after the second failure %s, want %s", d, 2*defaultBaseDelay)
	}

	inner.err = nil
	clock.step(interval)
	if _, err := p.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := failures.NumRequeues(req); n != 0 {
		t.Fatalf("a successful pass left %d failures, want 0", n)
	}

	// Requeue (deprecated, still honoured) is a failure to controller-runtime too.
	failures.When(req)
	inner.result = reconcile.Result{Requeue: true} //nolint:staticcheck // the deprecated field is still honoured, and must still be
	clock.step(interval)
	_, _ = p.Reconcile(ctx, req)
	if n := failures.NumRequeues(req); n != 1 {
		t.Fatalf("a pass that asked for Requeue forgot the failures: %d, want 1", n)
	}
}

func TestOldEntriesAreDropped(t *testing.T) {
	clock := newFakeClock()
	inner := &counting{}
	p, _ := paced(inner, clock)
	ctx := context.Background()

	// Ten requests per tenth of an interval, for ten intervals: 1,000 distinct requests.
	most := 0
	for i := range 1000 {
		_, _ = p.Reconcile(ctx, request(fmt.Sprint(i)))
		if i%10 == 9 {
			clock.step(interval / 10)
		}
		p.mu.Lock()
		most = max(most, len(p.started))
		p.mu.Unlock()
	}
	// At most the requests of the last two intervals (200), plus those of the step at
	// which a sweep ran.
	if most > 210 {
		t.Fatalf("the map held %d entries, want at most 210", most)
	}

	// One request long after: everything older than the interval goes.
	clock.step(10 * interval)
	_, _ = p.Reconcile(ctx, request("late"))
	if n := len(p.started); n != 1 {
		t.Fatalf("%d entries left, want 1", n)
	}
}

// Many workers, each request on one worker at a time as controller-runtime does: every
// request runs exactly once per interval. Run with -race to check the locking.
func TestConcurrentWorkers(t *testing.T) {
	inner := &counting{}
	r, _ := Wrap(inner, time.Hour, controller.Options{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				req := request(fmt.Sprintf("%d-%d", w, i))
				for range 5 {
					_, _ = r.Reconcile(context.Background(), req)
				}
			}
		})
	}
	wg.Wait()
	for w := range 8 {
		for i := range 50 {
			if n := inner.count(request(fmt.Sprintf("%d-%d", w, i))); n != 1 {
				t.Fatalf("request %d-%d ran %d passes, want 1", w, i, n)
			}
		}
	}
}
