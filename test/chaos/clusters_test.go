package chaos

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// tracked is a cluster the checkers watch, with the replicas the scenario asked of its
// control plane over time.
type tracked struct {
	key          types.NamespacedName
	controlPlane string

	mu       sync.Mutex
	replicas []replicaChange
	// fullAt is when etcd first had all the replicas asked for: from then on it must
	// keep a quorum of them.
	full bool
}

type replicaChange struct {
	n  int32
	at time.Time
}

// registry is every cluster being watched.
type registry struct {
	mu       sync.Mutex
	clusters map[types.NamespacedName]*tracked
}

func newRegistry() *registry { return &registry{clusters: map[types.NamespacedName]*tracked{}} }

// add starts watching a cluster whose control plane is asked for replicas servers.
func (r *registry) add(key types.NamespacedName, controlPlane string, replicas int32) *tracked {
	c := &tracked{key: key, controlPlane: controlPlane, replicas: []replicaChange{{replicas, time.Now()}}}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clusters[key] = c
	return c
}

// get is the tracked cluster, or nil.
func (r *registry) get(key types.NamespacedName) *tracked {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clusters[key]
}

// remove stops watching a cluster (before it is deleted: its quorum goes on purpose).
func (r *registry) remove(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.clusters, key)
}

func (r *registry) all() []*tracked {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*tracked, 0, len(r.clusters))
	for _, c := range r.clusters {
		out = append(out, c)
	}
	return out
}

// setReplicas records a change of the control plane's replicas, just before the
// scenario makes it.
func (c *tracked) setReplicas(n int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replicas = append(c.replicas, replicaChange{n, time.Now()})
	c.full = false
}

// current is the replicas asked for now.
func (c *tracked) current() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.replicas[len(c.replicas)-1].n
}

// allowedAt is the most replicas asked for at any time since a moment before t: a
// Machine created at t may have been decided a little earlier, on the spec then.
func (c *tracked) allowedAt(t time.Time) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	const decisionLag = 10 * time.Second
	var most int32
	for i, ch := range c.replicas {
		// A change in effect at t-lag or made after it counts.
		inEffect := i == len(c.replicas)-1 || c.replicas[i+1].at.After(t.Add(-decisionLag))
		if inEffect && ch.n > most {
			most = ch.n
		}
	}
	return most
}
