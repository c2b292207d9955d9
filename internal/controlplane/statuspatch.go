package controlplane

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// passPatch writes what one pass changed on a KThreesControlPlane: its metadata and
// spec in one merge patch, its whole status (conditions included) in another, each
// only when it changed.
//
// CAPI's patch helper, used before, sends the conditions and the other status fields
// as two requests, so most passes cost two status writes, and every write wakes CAPI's
// Cluster controller, which then patches the Cluster's status again. capk3s is the
// only writer of this status, so one request serves: it carries the resourceVersion
// the pass started from, and a pass computed from a stale read gets a conflict and
// runs again on fresh data instead of writing over a newer status.
type passPatch struct {
	before *controlplanev1.KThreesControlPlane
}

func newPassPatch(kcp *controlplanev1.KThreesControlPlane) *passPatch {
	return &passPatch{before: kcp.DeepCopy()}
}

// write sends the changes from the object the pass read to kcp. The metadata and spec
// go first, without a precondition, as CAPI's helper sends them: the finalizer a first
// pass adds must be stored even when its status write conflicts. It returns the
// resourceVersions its writes replaced (none when it wrote nothing).
func (p *passPatch) write(ctx context.Context, c client.Client, kcp *controlplanev1.KThreesControlPlane) (replaced []string, _ error) {
	base := p.before.DeepCopy()
	obj := kcp.DeepCopy()
	obj.Status = base.Status
	changed, err := hasChanges(client.MergeFrom(base), obj)
	if err != nil {
		return nil, err
	}
	if changed {
		if err := c.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
			return nil, fmt.Errorf("metadata and spec: %w", err)
		}
		replaced = append(replaced, base.ResourceVersion)
		// The stored object is the new base; its status is still the one read.
		base = obj.DeepCopy()
	}

	obj = base.DeepCopy()
	obj.Status = *kcp.Status.DeepCopy()
	if changed, err = hasChanges(client.MergeFrom(base), obj); err != nil || !changed {
		return replaced, err
	}
	err = c.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) {
		// The object changed after this pass read it, so its watch has queued another
		// pass, which computes the status from what is stored now.
		ctrl.LoggerFrom(ctx).V(4).Info("Status not written: the control plane changed since this pass read it")
		return replaced, nil
	}
	if err != nil {
		return replaced, fmt.Errorf("status: %w", err)
	}
	return append(replaced, base.ResourceVersion), nil
}

// hasChanges reports whether a merge patch from the base to obj would change anything.
// It compares the JSON the patch would send, so that times equal to the second, the
// precision they are stored with, are equal.
func hasChanges(p client.Patch, obj client.Object) (bool, error) {
	data, err := p.Data(obj)
	if err != nil {
		return false, fmt.Errorf("computing the patch: %w", err)
	}
	return string(data) != "{}", nil
}
