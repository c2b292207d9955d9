package statuspatch

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Pass remembers an object as a reconcile pass read it, to write what the pass changed.
type Pass struct {
	before client.Object
}

// New starts a pass on obj, as read; the pass then changes obj.
func New(obj client.Object) *Pass {
	return &Pass{before: obj.DeepCopyObject().(client.Object)}
}

// Write sends the changes from the object the pass read to obj, which it leaves as it
// is. The metadata and spec go first, without a precondition, as CAPI's patch helper
// sends them: a finalizer the pass adds must be stored even when its status write
// conflicts. It returns the resourceVersions its writes replaced (none when it wrote
// nothing).
func (p *Pass) Write(ctx context.Context, c client.Client, obj client.Object) (replaced []string, _ error) {
	rest, status, err := split(p.before, obj)
	if err != nil {
		return nil, err
	}
	version := p.before.GetResourceVersion()
	if rest != nil {
		stored := p.before.DeepCopyObject().(client.Object)
		if err := c.Patch(ctx, stored, client.RawPatch(types.MergePatchType, rest)); err != nil {
			return nil, fmt.Errorf("metadata and spec: %w", err)
		}
		replaced = append(replaced, version)
		// The status write is guarded by the version this write made.
		version = stored.GetResourceVersion()
	}
	if status == nil {
		return replaced, nil
	}
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]string{"resourceVersion": version},
		"status":   status,
	})
	if err != nil {
		return replaced, fmt.Errorf("status: %w", err)
	}
	err = c.Status().Patch(ctx, p.before.DeepCopyObject().(client.Object), client.RawPatch(types.MergePatchType, body))
	if apierrors.IsConflict(err) {
		// The object changed after this pass read it, so its watch has queued another
		// pass, which computes the status from what is stored now.
		ctrl.LoggerFrom(ctx).V(4).Info("Status not written: the object changed since this pass read it")
		return replaced, nil
	}
	if err != nil {
		return replaced, fmt.Errorf("status: %w", err)
	}
	return append(replaced, version), nil
}

// split computes the merge patch from before to after and parts it into the status and
// the rest (metadata and spec); each is nil when unchanged. Comparing the JSON the
// patch would send makes times equal to the second, the precision they are stored
// with, equal.
func split(before, after client.Object) (rest []byte, status json.RawMessage, _ error) {
	data, err := client.MergeFrom(before).Data(after)
	if err != nil {
		return nil, nil, fmt.Errorf("computing the patch: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, nil, fmt.Errorf("computing the patch: %w", err)
	}
	status = fields["status"]
	delete(fields, "status")
	if len(fields) == 0 {
		return nil, status, nil
	}
	if rest, err = json.Marshal(fields); err != nil {
		return nil, nil, fmt.Errorf("computing the patch: %w", err)
	}
	return rest, status, nil
}
