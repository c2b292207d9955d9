package secretcache_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/secretcache"
	"github.com/capk3s/capk3s/test/envtest"
)

// liveCounter is the live reader, counting the reads that reach it.
type liveCounter struct {
	client.Reader
	secretGets  atomic.Int32
	otherGets   atomic.Int32
	secretLists atomic.Int32
}

func (l *liveCounter) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.SecretList); ok {
		l.secretLists.Add(1)
	}
	return l.Reader.List(ctx, list, opts...)
}

func (l *liveCounter) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		l.secretGets.Add(1)
	} else {
		l.otherGets.Add(1)
	}
	return l.Reader.Get(ctx, key, obj, opts...)
}

// served are the purposes of the Secrets whose data the tests' caches keep, as the
// control plane's does.
var served = []secret.Purpose{secret.ClusterCA, "cca", secret.EtcdCA, "token", secret.Kubeconfig}

// startCache starts a Secret cache on the test apiserver that keeps the data of the
// served Secrets.
func startCache(t *testing.T) cache.Cache {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := secretcache.NewCache(ctx, env.Config, cache.Options{Scheme: env.Scheme}, served)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the Secret cache did not sync")
	}
	return c
}

// startReader starts a Secret cache on the test apiserver and returns a Reader over it.
func startReader(t *testing.T) (*secretcache.Reader, *liveCounter) {
	t.Helper()
	live := &liveCounter{Reader: env.Client}
	return secretcache.FromCache(startCache(t), live), live
}

func newSecret(ns, name string, labelled bool) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data:       map[string][]byte{"value": []byte(name)},
	}
	if labelled {
		s.Labels = map[string]string{clusterv1.ClusterNameLabel: "c"}
	}
	return s
}

// eventually polls a condition for up to ten seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := envtest.Eventually(context.Background(), 10*time.Second, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestLabelledSecretsComeFromTheCache(t *testing.T) {
	ns := env.NewNamespace(t)
	r, live := startReader(t)
	ctx := context.Background()
	if err := env.Client.Create(ctx, newSecret(ns, "c-ca", true)); err != nil {
		t.Fatal(err)
	}
	// Until the cache has it, the read goes live and still finds it.
	got := &corev1.Secret{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-ca"}, got); err != nil {
		t.Fatalf("a Secret just created was not found: %v", err)
	}
	if string(got.Data["value"]) != "c-ca" {
		t.Fatalf("read %q, want the Secret's data", got.Data["value"])
	}
	// Once the cache has it, reads cost the API server nothing.
	eventually(t, "reads of a cached Secret kept going live", func() bool {
		before := live.secretGets.Load()
		s := &corev1.Secret{}
		err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-ca"}, s)
		return err == nil && string(s.Data["value"]) == "c-ca" && live.secretGets.Load() == before
	})
}

func TestUnlabelledSecretsAreReadLive(t *testing.T) {
	ns := env.NewNamespace(t)
	r, live := startReader(t)
	ctx := context.Background()
	if err := env.Client.Create(ctx, newSecret(ns, "old-token", false)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		before := live.secretGets.Load()
		s := &corev1.Secret{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old-token"}, s); err != nil {
			t.Fatalf("an unlabelled Secret was not found: %v", err)
		}
		if live.secretGets.Load() != before+1 {
			t.Fatalf("an unlabelled Secret was not read live")
		}
	}
}

// A NotFound is believed only from the API server: a Secret deleted live is reported
// missing at once, even while the cache may still hold it, and the read that says so
// went live.
func TestNotFoundIsAlwaysConfirmedLive(t *testing.T) {
	ns := env.NewNamespace(t)
	r, live := startReader(t)
	ctx := context.Background()
	before := live.secretGets.Load()
	err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: "missing"}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("want NotFound for a missing Secret, got %v", err)
	}
	if live.secretGets.Load() != before+1 {
		t.Fatal("a NotFound was answered by the cache alone")
	}
}

func TestOtherKindsAreReadLive(t *testing.T) {
	ns := env.NewNamespace(t)
	r, live := startReader(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm", Labels: map[string]string{clusterv1.ClusterNameLabel: "c"}}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := r.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
		t.Fatalf("a ConfigMap read through the Reader failed: %v", err)
	}
	if live.otherGets.Load() != 1 {
		t.Fatalf("a ConfigMap was not read live (%d live reads)", live.otherGets.Load())
	}
}

func TestLiveReaderHasNoSource(t *testing.T) {
	if src := secretcache.Live(env.Client).Source(nil); src != nil {
		t.Fatalf("a Reader without cache gave a watch source: %v", src)
	}
}
