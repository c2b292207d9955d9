package etcdsnapshot

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s/supervisor"
)

// flights runs the supervisor requests off the controller's workers. A save holds
// its connection for minutes (k3s answers when the upload is done); on a worker it
// would hold every other cluster's snapshot, and with it their rollouts, behind
// it. Each request runs in a goroutine of its own; its answer is kept here until a
// pass of its snapshot reads it, and the pass is asked for through wake.
//
// Only this process knows of its flights: after a restart the snapshot is Running
// with no flight, and k3s's records decide it, as for a request whose answer was lost.
type flights struct {
	mu    sync.Mutex
	byKey map[types.NamespacedName]*flight
	// wake re-enqueues a snapshot whose answer came; nil without a manager.
	wake chan event.GenericEvent
	// stopped ends with the manager: a wake nobody reads any more is dropped.
	stopped <-chan struct{}
}

// flight is one request: at most one per snapshot object.
type flight struct {
	uid types.UID
	// deadline is when the request's own timeout will have ended it.
	deadline time.Time
	done     chan struct{}
	// res and err are the answer, set before done is closed.
	res supervisor.SaveResult
	err error
}

func (f *flight) finished() bool {
	select {
	case <-f.done:
		return true
	default:
	}
	return false
}

// get is the flight of s, nil when this process sent none for this object.
func (q *flights) get(s *controlplanev1.KThreesEtcdSnapshot) *flight {
	q.mu.Lock()
	defer q.mu.Unlock()
	f := q.byKey[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}]
	if f == nil || f.uid != s.UID {
		return nil
	}
	return f
}

// forget drops the flight of key, once its answer is read or its object is gone.
func (q *flights) forget(key types.NamespacedName) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.byKey, key)
}

// send starts the request for s, which the caller has just marked Running (the
// optimistic lock on that write is what makes it the only sender). ctx's values
// (the logger) are kept, its end is not: the request outlives the pass, bounded
// by the client's own timeout.
func (q *flights) send(ctx context.Context, s *controlplanev1.KThreesEtcdSnapshot, c *supervisor.Client, req supervisor.SaveRequest) *flight {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = supervisor.DefaultTimeout
	}
	f := &flight{uid: s.UID, deadline: time.Now().Add(timeout), done: make(chan struct{})}
	key := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
	q.mu.Lock()
	if q.byKey == nil {
		q.byKey = map[types.NamespacedName]*flight{}
	}
	q.byKey[key] = f
	q.mu.Unlock()
	obj := &controlplanev1.KThreesEtcdSnapshot{}
	obj.Namespace, obj.Name = s.Namespace, s.Name
	ctx = context.WithoutCancel(ctx)
	go func() {
		f.res, f.err = c.Save(ctx, req)
		close(f.done)
		if q.wake == nil {
			return
		}
		select {
		case q.wake <- event.GenericEvent{Object: obj}:
		case <-q.stopped:
		}
	}()
	return f
}
