package conversion

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// storedObjects stands in for the apiserver's storage: an object converted down
// through storing is what is stored under its kind, namespace and name, as it is
// when the apiserver converts a stored object for a v1beta1 client.
type storedObjects struct {
	mu   sync.Mutex
	objs map[string]client.Object
}

// useStoredObjects makes a fresh storage lk's stored object reader.
func useStoredObjects(lk *Lookups) *storedObjects {
	s := &storedObjects{objs: map[string]client.Object{}}
	lk.Stored = s
	return s
}

func storedKey(obj client.Object, key client.ObjectKey) string {
	return fmt.Sprintf("%T %s", obj, key)
}

func (s *storedObjects) put(obj client.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs[storedKey(obj, client.ObjectKeyFromObject(obj))] = obj.DeepCopyObject().(client.Object)
}

func (s *storedObjects) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objs[storedKey(obj, key)]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: fmt.Sprintf("%T", obj)}, key.Name)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(o.DeepCopyObject()).Elem())
	return nil
}

func (*storedObjects) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not supported")
}

// storing is convert (a down-conversion) that first stores the hub object it converts.
func storing[H client.Object, S any](s *storedObjects, convert func(context.Context, H, S) error) func(context.Context, H, S) error {
	return func(ctx context.Context, hub H, spoke S) error {
		s.put(hub)
		return convert(ctx, hub, spoke)
	}
}
