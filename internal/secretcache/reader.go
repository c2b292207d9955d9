package secretcache

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Reader reads Secrets from the cache and falls back to a live read where the cache
// has none. Other kinds are read live. The zero value is not usable; build one with New
// or Live.
type Reader struct {
	cached cache.Cache
	live   client.Reader
	// metadata, when set, answers whether a Secret exists, labelled or not (see
	// WithSecretMetadata); ForPass needs it to answer NotFound without a live read.
	metadata client.Reader
}

// New makes a cache of the cluster-labelled Secrets, started and stopped with mgr,
// and a Reader over it that reads live through mgr's API reader. The cache is separate
// from the manager's own, which other watches (Secrets by metadata, cluster-wide) keep
// unfiltered.
//
// namespace, when not empty, limits the cache to one namespace, as the manager's
// --namespace limits its own cache (and its permissions). keep are the purposes of the
// Secrets whose data the cache holds (see NewCache): those the caller reads.
func New(ctx context.Context, mgr ctrl.Manager, namespace string, keep []secret.Purpose) (*Reader, error) {
	opts := cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient()}
	if namespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	c, err := NewCache(ctx, mgr.GetConfig(), opts, keep)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the Secret cache to the manager: %w", err)
	}
	return FromCache(c, mgr.GetAPIReader()), nil
}

// NewCache makes the cache (not started) of the Secrets labelled with a cluster
// name, with base's scheme, mapper and HTTP client, and its Secret informer. It holds
// the data of the Secrets named <cluster>-<purpose> for one of keep's purposes, where
// <cluster> is the Secret's cluster-name label, and only the metadata of the others
// (a machine's bootstrap data, the user's): a Reader reads those live.
func NewCache(ctx context.Context, cfg *rest.Config, base cache.Options, keep []secret.Purpose) (cache.Cache, error) {
	req, err := labels.NewRequirement(clusterv1.ClusterNameLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	base.ByObject = map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Label: labels.NewSelector().Add(*req), Transform: dropUnreadData(keep)},
	}
	base.DefaultTransform = cache.TransformStripManagedFields()
	c, err := cache.New(cfg, base)
	if err != nil {
		return nil, fmt.Errorf("creating the Secret cache: %w", err)
	}
	// The informer exists before the cache starts, so that the first pass does not
	// start it and wait for its first list.
	if _, err := c.GetInformer(ctx, &corev1.Secret{}); err != nil {
		return nil, fmt.Errorf("creating the Secret informer: %w", err)
	}
	return c, nil
}

// FromCache is a Reader over c (made by NewCache) that reads live through live.
func FromCache(c cache.Cache, live client.Reader) *Reader { return &Reader{cached: c, live: live} }

// WithSecretMetadata is r knowing, from metadata, which Secrets exist: metadata must
// read metav1.PartialObjectMetadata Secrets (SecretMetadata) from an informer of every
// Secret of the namespaces it serves, unfiltered, that the caller runs anyway, such
// as the manager's cache of a controller that watches Secrets with
// builder.OnlyMetadata. A cache with no such informer would start one on the first
// read: a watch of every Secret that the caller did not ask for. And a filtered one
// would hide Secrets that exist, which ForPass would then report missing.
func (r *Reader) WithSecretMetadata(metadata client.Reader) *Reader {
	with := *r
	with.metadata = metadata
	return &with
}

// SecretMetadata is an empty metav1.PartialObjectMetadata of kind Secret, for reading
// Secrets by metadata only.
func SecretMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return m
}

// Live is a Reader without cache: every read goes to live. For callers that were given
// no cache (tests, tools).
func Live(live client.Reader) *Reader { return &Reader{live: live} }

// Get reads obj. A Secret comes from the cache when the cache has it with its data; a
// NotFound from the cache, a copy without data, or a cache error, is answered by a
// live read.
func (r *Reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if s, isSecret := obj.(*corev1.Secret); isSecret && r.fromCache(ctx, key, s, opts...) {
		return nil
	}
	return r.live.Get(ctx, key, obj, opts...)
}

// fromCache reads s from the cache and says whether it found it there with its data.
// A cache error other than NotFound is logged. A copy the cache holds without data
// is not a find, and s is left empty for the live read: a read into a filled object
// would keep the copy's marker.
func (r *Reader) fromCache(ctx context.Context, key client.ObjectKey, s *corev1.Secret, opts ...client.GetOption) bool {
	if r.cached == nil {
		return false
	}
	err := r.cached.Get(ctx, key, s, opts...)
	if err != nil && !apierrors.IsNotFound(err) {
		ctrl.LoggerFrom(ctx).V(4).Info("Secret cache read failed; reading live", "Secret", key, "err", err)
	}
	if err == nil && withoutData(s) {
		*s = corev1.Secret{}
		return false
	}
	return err == nil
}

// Source is a watch on the cached Secrets for a controller, so that a pass runs once
// the cache has seen a change (the manager's metadata watch may see it first, and a
// pass then would read the cache's older copy). Nil for a Reader without cache.
func (r *Reader) Source(h handler.TypedEventHandler[client.Object, reconcile.Request]) source.Source {
	if r.cached == nil {
		return nil
	}
	return source.Kind(r.cached, client.Object(&corev1.Secret{}), h)
}

// List lists live: callers list rarely, and a list must not miss unlabelled objects.
func (r *Reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.live.List(ctx, list, opts...)
}
