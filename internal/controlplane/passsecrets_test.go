package controlplane

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/secretcache"
	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/envtest"
)

// secretReads is the live reader behind a Secret reader: it counts the Secret reads
// and lists that reach the API server.
type secretReads struct {
	client.Reader
	mu    sync.Mutex
	gets  []string
	lists int
}

func (s *secretReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		s.mu.Lock()
		s.gets = append(s.gets, key.Name)
		s.mu.Unlock()
	}
	return s.Reader.Get(ctx, key, obj, opts...)
}

func (s *secretReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.SecretList); ok {
		s.mu.Lock()
		s.lists++
		s.mu.Unlock()
	}
	return s.Reader.List(ctx, list, opts...)
}

// counts returns the Secrets read live and the number of live lists since the last reset.
func (s *secretReads) counts() ([]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.gets), s.lists
}

func (s *secretReads) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets, s.lists = nil, 0
}

// startSecretReader starts what SetupWithManager gives the control plane to read
// Secrets with: the cache of cluster-labelled Secrets, reading live through live, and
// the manager's metadata-only informer of all Secrets.
func startSecretReader(t *testing.T, live client.Reader) *secretcache.Reader {
	t.Helper()
	labelled, metadata := startSecretCaches(t)
	return secretcache.FromCache(labelled, live).WithSecretMetadata(metadata)
}

// startSecretCaches starts the cache of cluster-labelled Secrets and a metadata-only
// informer of all Secrets. The metadata cache fails a read it has no informer for
// rather than starting one, as a check that the reader needs no informer but that one.
func startSecretCaches(t *testing.T) (labelled, metadata cache.Cache) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	labelled, err := secretcache.NewCache(ctx, env.Config, cache.Options{Scheme: env.Scheme}, CachedSecretPurposes())
	if err != nil {
		t.Fatal(err)
	}
	metadata, err = cache.New(env.Config, cache.Options{Scheme: env.Scheme, ReaderFailOnMissingInformer: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := metadata.GetInformer(ctx, secretcache.SecretMetadata()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []cache.Cache{labelled, metadata} {
		go func() { _ = c.Start(ctx) }()
		if !c.WaitForCacheSync(ctx) {
			t.Fatal("a Secret cache did not sync")
		}
	}
	return labelled, metadata
}

// seesNothing is a metadata informer that has not seen any Secret yet.
type seesNothing struct{ client.Reader }

func (seesNothing) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
}

// notConnected is a ClusterCache that has not reached any workload cluster yet.
type notConnected struct{ clustercache.ClusterCache }

func (notConnected) GetReader(context.Context, client.ObjectKey) (client.Reader, error) {
	return nil, clustercache.ErrClusterNotConnected
}

// newControlPlaneWithEndpoint makes a Cluster whose infrastructure is provisioned and
// whose endpoint is set, and its control plane: the first pass creates all of the
// cluster's Secrets and its first server.
func newControlPlaneWithEndpoint(t *testing.T, ns string) *controlplanev1.KThreesControlPlane {
	t.Helper()
	ctx := context.Background()
	createInfraTemplate(t, ns)
	cluster, kcp := createStepTestCluster(t, ns, clusterv1.APIEndpoint{Host: "127.0.0.1", Port: 6443})
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	if err := env.Client.Status().Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	before := kcp.DeepCopy()
	if err := controllerutil.SetOwnerReference(cluster, kcp, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Patch(ctx, kcp, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	return kcp
}

// The first pass on a new cluster (the first that gets past the Paused condition) finds none of its Secrets (three CAs, the join
// token, the kubeconfig) and creates them all. That they are missing is confirmed
// with one live list of the cluster's Secrets, not with one live read each; the pass
// right after, whose Secret cache may not have seen those creates yet, reads none
// live either and lists at most once.
func TestTheFirstPassConfirmsMissingSecretsWithOneList(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	kcp := newControlPlaneWithEndpoint(t, ns)
	live := &secretReads{Reader: env.Client}
	r := &Reconciler{Client: env.Client, APIReader: env.Client, ClusterCache: notConnected{},
		Secrets: startSecretReader(t, live), writes: newOwnWrites()}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(kcp)}

	// A pass that only sets the Paused condition (the first one) comes before.
	for pass := 1; ; pass++ {
		live.reset()
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: token.SecretName("c1")}, &corev1.Secret{}); err == nil {
			break
		}
		if pass == 3 {
			t.Fatal("no pass created the join token")
		}
	}
	gets, lists := live.counts()
	for _, name := range append(caSecretNames(), token.SecretName("c1"), secret.Name("c1", secret.Kubeconfig)) {
		getSecret(t, ns, name)
	}
	t.Logf("the first pass: %d Secrets read live %v, %d lists", len(gets), gets, lists)
	if len(gets) != 0 || lists != 1 {
		t.Errorf("the first pass read %d Secrets live %v and listed %d times; want no read and one list", len(gets), gets, lists)
	}

	live.reset()
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	gets, lists = live.counts()
	t.Logf("the pass after: %d Secrets read live %v, %d lists", len(gets), gets, lists)
	if len(gets) != 0 || lists > 1 {
		t.Errorf("the second pass read %d Secrets live %v and listed %d times; want no read and at most one list", len(gets), gets, lists)
	}
}

// A CA the user provides without the cluster-name label is in neither the Secret
// cache nor the pass's list. A pass before the metadata informer has seen it takes it
// for missing: creating it fails with AlreadyExists, and nothing is overwritten. Once
// the informer has seen it, it is read live and used as it is.
func TestAnUnlabelledUserCAIsUsedNotOverwritten(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster, kcp := createStepTestCluster(t, ns, clusterv1.APIEndpoint{})
	user := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1-ca"},
		Type:       corev1.SecretTypeTLS,
		Data:       caData(newCAKeyPair(t)),
	}
	if err := env.Client.Create(ctx, user); err != nil {
		t.Fatal(err)
	}
	labelled, metadata := startSecretCaches(t)
	live := &secretReads{Reader: env.Client}
	unchanged := func(when string) {
		t.Helper()
		got := getSecret(t, ns, "c1-ca")
		if got.ResourceVersion != user.ResourceVersion || len(got.OwnerReferences) != 0 || len(got.Labels) != 0 {
			t.Fatalf("%s: the user's CA Secret was changed: %+v", when, got.ObjectMeta)
		}
	}

	blind := &Reconciler{Client: env.Client, APIReader: env.Client,
		Secrets: secretcache.FromCache(labelled, live).WithSecretMetadata(seesNothing{})}
	_, err := blind.reconcileCertificates(ctx, cluster, kcp, blind.passSecrets(cluster), blind.startedCheck(ctx, cluster, kcp))
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("a pass that has not seen the user's CA: reconcileCertificates = %v, want AlreadyExists", err)
	}
	unchanged("after a pass that had not seen it")

	if err := envtest.Eventually(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		return metadata.Get(ctx, client.ObjectKeyFromObject(user), secretcache.SecretMetadata()) == nil, nil
	}); err != nil {
		t.Fatalf("the metadata informer never saw the user's CA: %v", err)
	}
	r := &Reconciler{Client: env.Client, APIReader: env.Client,
		Secrets: secretcache.FromCache(labelled, live).WithSecretMetadata(metadata)}
	live.reset()
	cas, err := r.reconcileCertificates(ctx, cluster, kcp, r.passSecrets(cluster), r.startedCheck(ctx, cluster, kcp))
	if err != nil {
		t.Fatalf("reconcileCertificates: %v", err)
	}
	requireCondition(t, kcp, metav1.ConditionTrue, certificatesAvailableReason)
	if !bytes.Equal(cas[secret.ClusterCA].Data[secret.TLSCrtDataName], user.Data[secret.TLSCrtDataName]) {
		t.Error("the pass did not use the user's CA")
	}
	if gets, _ := live.counts(); !slices.Contains(gets, "c1-ca") {
		t.Errorf("the user's CA was not read live (live reads %v)", gets)
	}
	unchanged("after a pass that used it")
}

// secretRequests records, from a manager's transport, the requests for the Secrets of
// one namespace.
type secretRequests struct {
	next http.RoundTripper
	path string
	mu   sync.Mutex
	seen []string
}

func (s *secretRequests) RoundTrip(req *http.Request) (*http.Response, error) {
	if rest, ok := strings.CutPrefix(req.URL.Path, s.path); ok && req.Method == http.MethodGet {
		what := "get " + strings.TrimPrefix(rest, "/")
		if rest == "" {
			what = "list " + req.URL.RawQuery
		}
		if strings.Contains(req.Header.Get("Accept"), "PartialObjectMetadata") {
			what += " (metadata)"
		}
		s.mu.Lock()
		s.seen = append(s.seen, what)
		s.mu.Unlock()
	}
	return s.next.RoundTrip(req)
}

func (s *secretRequests) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// The manager's control plane, as SetupWithManager wires it, creates a new cluster's
// CAs and join token without reading any of them from the API server: their absence
// is confirmed by a list, and the metadata of unlabelled Secrets comes from the
// manager's metadata informer, not from the API server.
func TestTheManagerConfirmsANewClusterSecretsMissingWithoutReadingThem(t *testing.T) {
	ns := env.NewNamespace(t)
	watch := &secretRequests{path: "/api/v1/namespaces/" + ns + "/secrets"}
	startManagerWith(t, envtest.ManagerOptions{WrapTransport: func(next http.RoundTripper) http.RoundTripper {
		watch.next = next
		return watch
	}})
	_, kcp := newClusterWithControlPlane(t, ns, false)
	waitForCondition(t, kcp, controlplanev1.TokenAvailableCondition, metav1.ConditionTrue, controlplanev1.TokenAvailableReason)
	waitForCondition(t, kcp, controlplanev1.CertificatesAvailableCondition, metav1.ConditionTrue, certificatesAvailableReason)
	var lists int
	for _, req := range watch.requests() {
		switch {
		case strings.HasPrefix(req, "list "):
			lists++
		case strings.HasSuffix(req, "(metadata)"),
			slices.Contains(append(caSecretNames(), token.SecretName("c1")), strings.TrimPrefix(req, "get ")):
			t.Errorf("the control plane asked the API server %q", req)
		}
	}
	if lists == 0 {
		t.Errorf("no list confirmed the Secrets missing; requests: %v", watch.requests())
	}
}
