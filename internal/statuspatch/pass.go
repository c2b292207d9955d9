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

// Advance says that the pass itself wrote the object, guarded by the version it read,
// and stored version: the final writes are guarded by that one instead, since nobody
// else changed the object in between.
func (p *Pass) Advance(version string) {
	p.before.SetResourceVersion(version)
}

// Write sends the changes from the object the pass read to obj, which it leaves as it
// is. The metadata and spec go first, as CAPI's patch helper sends them, guarded by the
// resourceVersion the pass read; when that write conflicts, they are sent again
// without the guard (a finalizer the pass adds must be stored) and the status is not
// written. The status write is guarded by the version read, or by the one the
// guarded metadata write made from it: a status computed from a copy older than the
// stored one is never written. It returns the resourceVersions its writes replaced
// (none when it wrote nothing).
func (p *Pass) Write(ctx context.Context, c client.Client, obj client.Object) (replaced []string, _ error) {
	rest, status, err := split(p.before, obj)
	if err != nil {
		return nil, err
	}
	version := p.before.GetResourceVersion()
	if rest != nil {
		stored, current, err := p.writeRest(ctx, c, rest, version)
		if err != nil {
			return nil, err
		}
		replaced = append(replaced, version)
		if !current {
			ctrl.LoggerFrom(ctx).V(4).Info("Status not written: the object changed since this pass read it")
			return replaced, nil
		}
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

// writeRest sends the metadata and spec patch guarded by version; on a conflict it
// sends it again unguarded and reports that the object was not current.
func (p *Pass) writeRest(ctx context.Context, c client.Client, rest []byte, version string) (client.Object, bool, error) {
	guarded, err := withResourceVersion(rest, version)
	if err != nil {
		return nil, false, err
	}
	stored := p.before.DeepCopyObject().(client.Object)
	err = c.Patch(ctx, stored, client.RawPatch(types.MergePatchType, guarded))
	if err == nil {
		return stored, true, nil
	}
	if !apierrors.IsConflict(err) {
		return nil, false, fmt.Errorf("metadata and spec: %w", err)
	}
	stored = p.before.DeepCopyObject().(client.Object)
	if err := c.Patch(ctx, stored, client.RawPatch(types.MergePatchType, rest)); err != nil {
		return nil, false, fmt.Errorf("metadata and spec: %w", err)
	}
	return stored, false, nil
}

// OnlyStatusChanged says whether the pass changed obj's status and nothing else: the
// case a caller that knows its copy was current may write without this package's guard.
func (p *Pass) OnlyStatusChanged(obj client.Object) (bool, error) {
	rest, status, err := split(p.before, obj)
	return err == nil && rest == nil && status != nil, err
}

// withResourceVersion adds metadata.resourceVersion to a merge patch: the apiserver
// then applies it only to that version.
func withResourceVersion(patch []byte, version string) ([]byte, error) {
	var fields map[string]any
	if err := json.Unmarshal(patch, &fields); err != nil {
		return nil, fmt.Errorf("computing the patch: %w", err)
	}
	meta, _ := fields["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["resourceVersion"] = version
	fields["metadata"] = meta
	return json.Marshal(fields)
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
