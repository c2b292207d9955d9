package envtest

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Verbs that CountingClient counts. Subresource calls count under their own verb
// with a "status/"-style prefix, e.g. "patch/status".
const (
	VerbGet         = "get"
	VerbList        = "list"
	VerbWatch       = "watch"
	VerbCreate      = "create"
	VerbUpdate      = "update"
	VerbPatch       = "patch"
	VerbApply       = "apply"
	VerbDelete      = "delete"
	VerbDeleteAllOf = "deletecollection"
)

// CountingClient is a real client that counts its requests by verb, so that tests can
// assert that a reconcile made no writes at all.
type CountingClient struct {
	client.WithWatch

	mu     sync.Mutex
	counts map[string]int
}

// NewCountingClient returns a client of the environment's apiserver that counts.
func (e *Environment) NewCountingClient() (*CountingClient, error) {
	inner, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return WrapCounting(inner), nil
}

// WrapCounting counts the requests made through inner.
func WrapCounting(inner client.WithWatch) *CountingClient {
	c := &CountingClient{counts: map[string]int{}}
	c.WithWatch = interceptor.NewClient(inner, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			c.add(VerbGet)
			return cl.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			c.add(VerbList)
			return cl.List(ctx, list, opts...)
		},
		Watch: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
			c.add(VerbWatch)
			return cl.Watch(ctx, list, opts...)
		},
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			c.add(VerbCreate)
			return cl.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			c.add(VerbUpdate)
			return cl.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			c.add(VerbPatch)
			return cl.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, cl client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			c.add(VerbApply)
			return cl.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			c.add(VerbDelete)
			return cl.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			c.add(VerbDeleteAllOf)
			return cl.DeleteAllOf(ctx, obj, opts...)
		},
		SubResourceGet: func(ctx context.Context, cl client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceGetOption) error {
			c.add(VerbGet + "/" + sub)
			return cl.SubResource(sub).Get(ctx, obj, subObj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, cl client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			c.add(VerbCreate + "/" + sub)
			return cl.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			c.add(VerbUpdate + "/" + sub)
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			c.add(VerbPatch + "/" + sub)
			return cl.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceApply: func(ctx context.Context, cl client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			c.add(VerbApply + "/" + sub)
			return cl.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
	return c
}

func (c *CountingClient) add(verb string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[verb]++
}

// Count is how many requests of one verb were made since the last Reset.
func (c *CountingClient) Count(verb string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[verb]
}

// Writes is how many requests changed or could have changed state since the last Reset.
func (c *CountingClient) Writes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for verb, count := range c.counts {
		if !isRead(verb) {
			n += count
		}
	}
	return n
}

// Counts is a copy of every verb's count.
func (c *CountingClient) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for verb, count := range c.counts {
		out[verb] = count
	}
	return out
}

// Reset sets every count to zero.
func (c *CountingClient) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = map[string]int{}
}

func isRead(verb string) bool {
	switch verb {
	case VerbGet, VerbList, VerbWatch:
		return true
	}
	return len(verb) > len(VerbGet) && verb[:len(VerbGet)+1] == VerbGet+"/"
}
