package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// storage reads and writes the management cluster's etcd directly: a scenario that
// starts from what other software left behind must store objects in shapes (older
// API versions, other status) that the apiserver would convert or refuse on the way.
type storage struct {
	t *testing.T
	c *clientv3.Client
}

func openStorage(t *testing.T) *storage {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{env.EtcdURL()}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("connecting to etcd: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &storage{t: t, c: c}
}

// key is where kube-apiserver keeps a namespaced custom resource.
func storageKey(group, resource, namespace, name string) string {
	return fmt.Sprintf("/registry/%s/%s/%s/%s", group, resource, namespace, name)
}

// get returns the object stored under key, as JSON.
func (s *storage) get(key string) map[string]any {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := s.c.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		s.t.Fatalf("reading %s from etcd: %v (%d keys)", key, err, len(resp.Kvs))
	}
	obj := map[string]any{}
	if err := json.Unmarshal(resp.Kvs[0].Value, &obj); err != nil {
		s.t.Fatalf("decoding %s: %v", key, err)
	}
	return obj
}

// put stores obj under key as it is.
func (s *storage) put(key string, obj map[string]any) {
	s.t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.c.Put(ctx, key, string(b)); err != nil {
		s.t.Fatalf("writing %s to etcd: %v", key, err)
	}
}

// field walks obj along path and returns what is there, or nil.
func field(obj map[string]any, path ...string) any {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}
