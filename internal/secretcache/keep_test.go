package secretcache_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/secretcache"
)

// secretBytes is what every test Secret's data starts with, to look for in memory.
const secretBytes = "secret-bytes-of-"

// The cache keeps the data of the Secrets the reconcilers read (the cluster's CAs,
// token and kubeconfig, named <cluster>-<purpose> after their cluster-name label) and
// holds every other cluster-labelled Secret by its metadata alone: a machine's
// bootstrap data (its CA keys and token), a user's Secret labelled with the cluster
// (and kubectl's copy of it in last-applied-configuration), a Secret named like a CA
// of another cluster than its label says. Those are still read through the Reader,
// live and whole, with their own annotations only.
func TestTheCacheKeepsOnlyTheDataTheReconcilersRead(t *testing.T) {
	ns := env.NewNamespace(t)
	ctx := context.Background()
	cached := startCache(t)
	live := &liveCounter{Reader: env.Client}
	r := secretcache.FromCache(cached, live)

	kept := []string{"c-ca", "c-cca", "c-etcd", "c-token", "c-kubeconfig"}
	dropped := []string{"c-md-0-x7k2p", "registry-auth", "d-ca"}
	for _, name := range append(append([]string{}, kept...), dropped...) {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: "c"}},
			Data:       map[string][]byte{"value": []byte(secretBytes + name)},
		}
		if name == "registry-auth" {
			s.Annotations = map[string]string{
				"team":                             "a",
				corev1.LastAppliedConfigAnnotation: `{"data":{"value":"` + secretBytes + name + `"}}`,
			}
		}
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}

	list := &corev1.SecretList{}
	eventually(t, "the cache never held the Secrets", func() bool {
		return cached.List(ctx, list, client.InNamespace(ns)) == nil && len(list.Items) == len(kept)+len(dropped)
	})
	for _, s := range list.Items {
		held := len(s.Data) != 0 || len(s.StringData) != 0
		for _, v := range s.Annotations {
			held = held || strings.Contains(v, secretBytes)
		}
		if want := slices.Contains(kept, s.Name); held != want {
			t.Errorf("the cache holds Secret %s with its data: %v, want %v", s.Name, held, want)
		}
	}

	// Read through the Reader, a Secret whose data the cache did not keep is read
	// live, whole, as the API server has it; the others come from the cache.
	for _, name := range append(append([]string{}, kept...), dropped...) {
		before := live.now()
		got := &corev1.Secret{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			t.Fatalf("reading Secret %s: %v", name, err)
		}
		if string(got.Data["value"]) != secretBytes+name {
			t.Errorf("Secret %s read without its data", name)
		}
		wantLive := int32(0)
		if !slices.Contains(kept, name) {
			wantLive = 1
		}
		live.expect(t, "reading Secret "+name, before, wantLive, 0)
		for k := range got.Annotations {
			if k != "team" && k != corev1.LastAppliedConfigAnnotation {
				t.Errorf("Secret %s read with annotation %s, which the API server does not have", name, k)
			}
		}
	}
}
