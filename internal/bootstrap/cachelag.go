package bootstrap

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// cacheIsBehind says whether the API server holds a newer KThreesConfig than the
// cached copy this pass started from. Rendering is decided from the cached copy's
// status ("no data yet"); a copy that does not yet show the status this controller
// wrote a moment ago would render the data again, only to find the init lock and the
// data Secret already there (two writes answered 409 Conflict, and a pass in error).
// A newer version always brings its own watch event, so a pass that finds the cache
// behind does nothing and leaves the work to the pass that event starts.
//
// It reads the config's metadata only, and only on the passes of a config without
// data, which are a few in a machine's life. It runs before anything else of the pass,
// which would otherwise write status computed from the older copy.
func (r *Reconciler) cacheIsBehind(ctx context.Context, config *bootstrapv1.KThreesConfig) (bool, error) {
	if r.APIReader == nil {
		return false, nil
	}
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(bootstrapv1.GroupVersion.WithKind("KThreesConfig"))
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(config), live); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted meanwhile: the deletion event is on its way.
			return true, nil
		}
		return false, fmt.Errorf("reading KThreesConfig from the API server: %w", err)
	}
	return live.ResourceVersion != config.ResourceVersion, nil
}
