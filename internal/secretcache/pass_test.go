package secretcache_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/secretcache"
)

// unsynced is a Secret cache that has seen no Secret yet, as the cache is right after
// the controller created the Secrets.
type unsynced struct{ cache.Cache }

func (unsynced) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
}

func (unsynced) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// startMetadata starts a metadata-only informer of all Secrets, as the control plane's
// manager runs one. It fails reads it has no informer for rather than starting one.
func startMetadata(t *testing.T) cache.Cache {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, ReaderFailOnMissingInformer: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetInformer(ctx, secretcache.SecretMetadata()); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the Secret metadata cache did not sync")
	}
	return c
}

// waitUntilSeen waits until c (a metadata cache) has seen the Secret key.
func waitUntilSeen(t *testing.T, c client.Reader, key client.ObjectKey) {
	t.Helper()
	eventually(t, "the metadata informer never saw Secret "+key.String(), func() bool {
		return c.Get(context.Background(), key, secretcache.SecretMetadata()) == nil
	})
}

// expect checks the live Secret reads and lists made since before.
func (l *liveCounter) expect(t *testing.T, what string, before [2]int32, gets, lists int32) {
	t.Helper()
	if g, ls := l.secretGets.Load()-before[0], l.secretLists.Load()-before[1]; g != gets || ls != lists {
		t.Errorf("%s: %d live reads and %d lists, want %d and %d", what, g, ls, gets, lists)
	}
}

func (l *liveCounter) now() [2]int32 { return [2]int32{l.secretGets.Load(), l.secretLists.Load()} }

// A Secret the controller created (labelled) that the cache has not seen yet is found
// in the pass's list, without a live read.
func TestPassFindsALabelledSecretTheCacheHasNotSeen(t *testing.T) {
	ns := env.NewNamespace(t)
	ctx := context.Background()
	live := &liveCounter{Reader: env.Client}
	r := secretcache.FromCache(unsynced{}, live).WithSecretMetadata(startMetadata(t))
	if err := env.Client.Create(ctx, newSecret(ns, "c-ca", true)); err != nil {
		t.Fatal(err)
	}
	before := live.now()
	got := &corev1.Secret{}
	if err := r.ForPass(client.ObjectKey{Namespace: ns, Name: "c"}).Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-ca"}, got); err != nil {
		t.Fatalf("a labelled Secret the cache has not seen was not found: %v", err)
	}
	if string(got.Data["value"]) != "c-ca" {
		t.Fatalf("read %q, want the Secret's data", got.Data["value"])
	}
	live.expect(t, "a labelled Secret missing from the cache", before, 0, 1)
}

// An unlabelled Secret (the user's own CA, a token made by older software) is never in
// the cache nor in the list: once the metadata informer has seen it, it is read live
// and returned, not reported missing, and no list is made for it.
func TestPassReadsAnUnlabelledSecretLive(t *testing.T) {
	ns := env.NewNamespace(t)
	ctx := context.Background()
	r, live := startReader(t)
	metadata := startMetadata(t)
	r = r.WithSecretMetadata(metadata)
	key := client.ObjectKey{Namespace: ns, Name: "c-ca"}
	if err := env.Client.Create(ctx, newSecret(ns, key.Name, false)); err != nil {
		t.Fatal(err)
	}
	waitUntilSeen(t, metadata, key)
	before := live.now()
	got := &corev1.Secret{}
	if err := r.ForPass(client.ObjectKey{Namespace: ns, Name: "c"}).Get(ctx, key, got); err != nil {
		t.Fatalf("an unlabelled Secret was not found: %v", err)
	}
	if string(got.Data["value"]) != "c-ca" {
		t.Fatalf("read %q, want the Secret's data", got.Data["value"])
	}
	live.expect(t, "an unlabelled Secret", before, 1, 0)

	// Labelled for another cluster name: not in this cluster's list either.
	other := newSecret(ns, "c-token", true)
	other.Labels[clusterv1.ClusterNameLabel] = "another"
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	waitUntilSeen(t, metadata, client.ObjectKeyFromObject(other))
	// Read before the cache has it, else it is a cache hit.
	p := secretcache.FromCache(unsynced{}, live).WithSecretMetadata(metadata).ForPass(client.ObjectKey{Namespace: ns, Name: "c"})
	before = live.now()
	if err := p.Get(ctx, client.ObjectKeyFromObject(other), &corev1.Secret{}); err != nil {
		t.Fatalf("a Secret labelled for another cluster name was not found: %v", err)
	}
	live.expect(t, "a Secret labelled for another cluster name", before, 1, 0)
}

// Missing Secrets are NotFound without a live read each: one list per pass answers
// them all. The next pass lists again.
func TestPassConfirmsMissingSecretsWithOneList(t *testing.T) {
	ns := env.NewNamespace(t)
	ctx := context.Background()
	r, live := startReader(t)
	r = r.WithSecretMetadata(startMetadata(t))
	cluster := client.ObjectKey{Namespace: ns, Name: "c"}
	for pass := 1; pass <= 2; pass++ {
		p := r.ForPass(cluster)
		before := live.now()
		for _, name := range []string{"c-ca", "c-cca", "c-etcd", "c-token", "c-kubeconfig"} {
			err := p.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{})
			if !apierrors.IsNotFound(err) {
				t.Fatalf("pass %d: want NotFound for missing Secret %s, got %v", pass, name, err)
			}
		}
		live.expect(t, fmt.Sprintf("pass %d: five missing Secrets", pass), before, 0, 1)
	}
}

// Without a metadata informer, a Secret that is in neither the cache nor the list is
// read live, as Get does: it may exist unlabelled. The list still answers the labelled.
func TestPassWithoutMetadataReadsWhatTheListLacksLive(t *testing.T) {
	ns := env.NewNamespace(t)
	ctx := context.Background()
	live := &liveCounter{Reader: env.Client}
	p := secretcache.FromCache(unsynced{}, live).ForPass(client.ObjectKey{Namespace: ns, Name: "c"})
	if err := env.Client.Create(ctx, newSecret(ns, "c-ca", true)); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, newSecret(ns, "c-token", false)); err != nil {
		t.Fatal(err)
	}
	before := live.now()
	if err := p.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-ca"}, &corev1.Secret{}); err != nil {
		t.Fatal(err)
	}
	if err := p.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-token"}, &corev1.Secret{}); err != nil {
		t.Fatalf("an unlabelled Secret was not found: %v", err)
	}
	if err := p.Get(ctx, client.ObjectKey{Namespace: ns, Name: "missing"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("want NotFound for a missing Secret, got %v", err)
	}
	live.expect(t, "without metadata", before, 2, 1)
}

// A cluster whose cache already holds many Secrets (a bootstrap data Secret per
// machine) is not listed for a miss: the list would carry them all. The miss is read
// live, as Get does.
func TestPassDoesNotListAClusterWithManySecrets(t *testing.T) {
	ns := env.NewNamespace(t)
	ctx := context.Background()
	cached := startCache(t)
	live := &liveCounter{Reader: env.Client}
	r := secretcache.FromCache(cached, live).WithSecretMetadata(startMetadata(t))
	const many = 20
	for i := range many {
		if err := env.Client.Create(ctx, newSecret(ns, fmt.Sprintf("machine-%d", i), true)); err != nil {
			t.Fatal(err)
		}
	}
	// Held by their metadata: the count needs no more.
	eventually(t, "the cache never held the machines' Secrets", func() bool {
		list := &corev1.SecretList{}
		return cached.List(ctx, list, client.InNamespace(ns)) == nil && len(list.Items) == many
	})
	before := live.now()
	err := r.ForPass(client.ObjectKey{Namespace: ns, Name: "c"}).Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-token"}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("want NotFound for a missing Secret, got %v", err)
	}
	live.expect(t, "a miss in a cluster with many Secrets", before, 1, 0)
}
