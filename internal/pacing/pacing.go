package pacing

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Default back-off of a failing object: controller-runtime's own per-item default for
// its priority queue, which capk3s's controllers use.
const (
	defaultBaseDelay = 5 * time.Millisecond
	defaultMaxDelay  = 1000 * time.Second
)

// Wrap paces r: a pass for an object starts at most once per interval. It returns
// the reconciler and the controller options to build the controller with; with an
// interval of 0 (or less) they are r and opts, unchanged.
//
// A request that comes sooner than interval after the start of its object's last
// pass is answered with a RequeueAfter of the time left, without calling r;
// otherwise r's result and error are returned as they are. A RequeueAfter shorter
// than the interval from r is still honoured by the queue, and the request it brings
// back is then paced like any other, so it runs once the interval is over.
//
// The options' rate limiter (controller-runtime's default when nil) is wrapped so
// that the paced answers do not reset a failing object's back-off: controller-runtime
// forgets an item's failures on every answer without an error, the paced ones
// included, which would retry a failing object once per interval forever. Wrapped, an
// item's failures are forgotten only when r itself returns without an error, and a
// failing object is retried after its back-off or the interval, whichever is longer.
func Wrap(r reconcile.Reconciler, interval time.Duration, opts controller.Options) (reconcile.Reconciler, controller.Options) {
	if interval <= 0 {
		return r, opts
	}
	limiter := opts.RateLimiter
	if limiter == nil {
		limiter = workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](defaultBaseDelay, defaultMaxDelay)
	}
	failures := &failureMemory{TypedRateLimiter: limiter}
	opts.RateLimiter = failures
	return newPacer(r, interval, time.Now, failures), opts
}

// pacer is the paced reconciler. controller-runtime never runs two passes for the same
// request at once, but runs different requests on many workers: the map is shared.
type pacer struct {
	inner    reconcile.Reconciler
	interval time.Duration
	now      func() time.Time
	failures *failureMemory

	mu sync.Mutex
	// started holds when each request's last pass started, for the requests whose last
	// pass started less than about two intervals ago: an older entry would let any
	// request through anyway, and is dropped by sweep.
	started map[reconcile.Request]time.Time
	// nextSweep is when sweep next looks at every entry.
	nextSweep time.Time
}

func newPacer(inner reconcile.Reconciler, interval time.Duration, now func() time.Time, failures *failureMemory) *pacer {
	return &pacer{
		inner:    inner,
		interval: interval,
		now:      now,
		failures: failures,
		started:  map[reconcile.Request]time.Time{},
	}
}

// Reconcile runs a pass for req, or answers when it may run.
func (p *pacer) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if wait := p.admit(req); wait > 0 {
		// No error and no Priority: the queue keeps the priority the request came with,
		// and the request's back-off is left as it was (failureMemory).
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	result, err := p.inner.Reconcile(ctx, req)
	// The same rule as controller-runtime's own, which forgets an item's failures on
	// every answer but an error or Requeue (an error's Requeue is ignored).
	if err == nil && !result.Requeue { //nolint:staticcheck // Requeue is deprecated, yet still honoured by controller-runtime
		p.failures.forget(req)
	}
	return result, err
}

// admit records now as the start of req's pass and returns 0 when req may run, or
// else returns how long it has to wait, recording nothing.
func (p *pacer) admit(req reconcile.Request) time.Duration {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if last, ok := p.started[req]; ok {
		if wait := last.Add(p.interval).Sub(now); wait > 0 {
			return wait
		}
	}
	p.started[req] = now
	p.sweep(now)
	return 0
}

// sweep drops the entries whose pass started an interval ago or earlier, once per
// interval: the map then holds no more than the requests that started a pass in the
// last two intervals, and the cost of a sweep is spread over the passes of an
// interval. It runs only when a pass starts; a controller without passes does not add
// entries either. Called with p.mu held.
func (p *pacer) sweep(now time.Time) {
	if now.Before(p.nextSweep) {
		return
	}
	for req, started := range p.started {
		if now.Sub(started) >= p.interval {
			delete(p.started, req)
		}
	}
	p.nextSweep = now.Add(p.interval)
}

// failureMemory is the queue's rate limiter, with Forget made a no-op: only the pacer
// forgets an item's failures, when the pass it ran succeeded (see Wrap). When and
// NumRequeues are the wrapped limiter's.
type failureMemory struct {
	workqueue.TypedRateLimiter[reconcile.Request]
}

// Forget is what the queue calls after every answer without an error, the paced ones
// included: it keeps the failures.
func (*failureMemory) Forget(reconcile.Request) {}

// forget forgets req's failures in the wrapped limiter.
func (f *failureMemory) forget(req reconcile.Request) {
	f.TypedRateLimiter.Forget(req)
}
