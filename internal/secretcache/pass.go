package secretcache

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// listAtMost is how many of a cluster's Secrets the cache may hold for a miss to be
// confirmed by listing them all. A new cluster has a handful (its CAs, join token and
// kubeconfig, its first servers' bootstrap data); a running one also has a bootstrap
// data Secret per machine, agents included, and a list of those would carry far more
// than the one Secret asked for, so its misses are read one by one, as by Get.
const listAtMost = 16

// PassReader reads one cluster's Secrets for one pass of a controller: see ForPass.
// It is safe for concurrent use.
type PassReader struct {
	r       *Reader
	cluster client.ObjectKey

	mu sync.Mutex
	// listed are the cluster's labelled Secrets by name, as the API server had them
	// when this reader listed them; nil until then.
	listed map[string]*corev1.Secret
	// unlisted is set when the list was not made (too many Secrets) or failed: misses
	// are then read live one by one, and the list is not tried again.
	unlisted bool
}

// ForPass returns a reader of cluster's Secrets for one pass, made at the start of the
// pass and dropped at its end. It answers like Get (a Secret the cache holds comes
// from the cache), except for a miss, which Get reads live one Secret at a time. On a
// new cluster every Secret misses, and on the pass after it the cache may not have
// seen the Secrets the pass before created. So the first miss lists the cluster's
// Secrets (those labelled cluster.x-k8s.io/cluster-name=<cluster>) live, once for the
// pass, and later misses look there:
//   - a Secret in the list is answered from it. A live list is as fresh as a live
//     read, and every Secret capk3s or CAPI creates for the cluster is labelled;
//   - a Secret not in the list may still exist unlabelled (the user's, or older
//     software's) or labelled for another cluster name. If the metadata informer
//     (WithSecretMetadata) has seen it, it is read live; if it has not, the answer is
//     NotFound. The informer sees every Secret, so it misses only one created a
//     moment ago; a caller that then creates it gets AlreadyExists, and no Secret is
//     overwritten. Without a metadata informer such a miss is read live.
//
// A Secret the informer has seen without this cluster's name on it is read live at
// once: no list would hold it (the user's CA, read so every pass, costs no list). A
// cluster whose cache holds more than listAtMost Secrets is not listed.
//
// The list reflects the moment it was made: a Secret created after it in the same
// pass is not in it. The control plane's steps read each Secret once, before they
// create it. The reader is for one pass: across passes the list would grow stale.
func (r *Reader) ForPass(cluster client.ObjectKey) *PassReader {
	return &PassReader{r: r, cluster: cluster}
}

// seen is what the metadata informer knows of a Secret.
type seen int

const (
	// seenUnknown: there is no metadata informer, or it could not answer.
	seenUnknown seen = iota
	// notSeen: the informer has not seen the Secret.
	notSeen
	// seenListed: seen labelled with this cluster's name; a list of the cluster's
	// Secrets holds it, unless it changed since.
	seenListed
	// seenUnlisted: seen, without this cluster's name on it; only a read finds it.
	seenUnlisted
)

// Get reads obj; see ForPass. Other kinds, and Secrets of other namespaces, are read
// as by the Reader's Get.
func (p *PassReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	s, isSecret := obj.(*corev1.Secret)
	if !isSecret || p.r.cached == nil || key.Namespace != p.cluster.Namespace {
		return p.r.Get(ctx, key, obj, opts...)
	}
	if p.r.fromCache(ctx, key, s, opts...) {
		return nil
	}
	known := p.seen(ctx, key)
	if known == seenUnlisted {
		// An unlabelled Secret is never in the cache: this is every pass's read of the
		// user's own CA or kubeconfig, and the list would not hold it either.
		return p.r.live.Get(ctx, key, obj, opts...)
	}
	listed, ok := p.list(ctx)
	if !ok {
		return p.r.live.Get(ctx, key, obj, opts...)
	}
	if found, ok := listed[key.Name]; ok {
		found.DeepCopyInto(s)
		return nil
	}
	if known == notSeen {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	// Listed before it changed (deleted, or its label removed), or the informer could
	// not say: only a read tells.
	return p.r.live.Get(ctx, key, obj, opts...)
}

// List lists live, as the Reader does.
func (p *PassReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return p.r.List(ctx, list, opts...)
}

// seen asks the metadata informer about key.
func (p *PassReader) seen(ctx context.Context, key client.ObjectKey) seen {
	if p.r.metadata == nil {
		return seenUnknown
	}
	m := SecretMetadata()
	err := p.r.metadata.Get(ctx, key, m)
	switch {
	case apierrors.IsNotFound(err):
		return notSeen
	case err != nil:
		ctrl.LoggerFrom(ctx).V(4).Info("Secret metadata read failed; reading live", "Secret", key, "err", err)
		return seenUnknown
	case m.Labels[clusterv1.ClusterNameLabel] == p.cluster.Name:
		return seenListed
	default:
		return seenUnlisted
	}
}

// list returns the cluster's labelled Secrets, listing them live on the first call,
// or ok=false when they are not listed: the cache already holds too many of them, or
// the list failed (its error is logged; the read that follows reports its own).
func (p *PassReader) list(ctx context.Context) (_ map[string]*corev1.Secret, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listed != nil || p.unlisted {
		return p.listed, !p.unlisted
	}
	inCluster := []client.ListOption{client.InNamespace(p.cluster.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: p.cluster.Name}}
	// Counted in memory: the objects are not copied, and not all of them are counted.
	cached := &corev1.SecretList{}
	count := append([]client.ListOption{client.Limit(listAtMost + 1), client.UnsafeDisableDeepCopy}, inCluster...)
	if err := p.r.cached.List(ctx, cached, count...); err != nil || len(cached.Items) > listAtMost {
		p.unlisted = true
		return nil, false
	}
	list := &corev1.SecretList{}
	if err := p.r.live.List(ctx, list, inCluster...); err != nil {
		ctrl.LoggerFrom(ctx).V(4).Info("Listing the cluster's Secrets failed; reading them one by one", "Cluster", p.cluster, "err", err)
		p.unlisted = true
		return nil, false
	}
	p.listed = make(map[string]*corev1.Secret, len(list.Items))
	for i := range list.Items {
		p.listed[list.Items[i].Name] = &list.Items[i]
	}
	return p.listed, true
}
