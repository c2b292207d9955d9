package bootstrap

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// writeStatusFromCurrentCopy writes the status of a pass that started from a copy the
// API server confirmed current (cacheIsBehind) without the resourceVersion guard that
// other passes' status writes carry (statuspatch). Those are the passes of a Machine's
// config without data: the one that renders it (or takes up its Secret), and the ones
// that record why it cannot yet.
//
// The guard keeps a status computed from an outdated copy from overwriting a newer
// one. These passes read a current copy, and the only status writer of a KThreesConfig
// is this controller, which runs one pass per config at a time: whatever changed the
// config since is someone else's metadata or spec write, above all CAPI's Machine and
// MachineSet controllers setting owner references and labels on a config that has just
// been created. Guarded, such a write was answered 409: the rendering pass left the
// data Secret unrecorded, and the next pass rendered again to be answered
// AlreadyExists on the Secret; a waiting pass left its reason unrecorded. The status
// written here stays true whatever that other write changed: the Secret exists or the
// reason holds, and observedGeneration names the spec it was computed from (a newer
// spec's event brings a pass that records its own generation).
//
// The caller writes here only a pass that changed nothing but the status. The write is
// a JSON patch whose first operation tests the config's UID: a config deleted and made
// again under the same name while the pass ran is another object, whose status this
// pass knows nothing of. (A merge patch cannot say that: on the status subresource the
// API server takes metadata from the stored object, so a uid in the patch is ignored;
// controller-runtime's only precondition for patches is the resourceVersion, the guard
// this write must not have.) The status replaces the stored one as a whole, which is
// what a merge patch from the current copy amounts to, since no one else writes it.
func writeStatusFromCurrentCopy(ctx context.Context, c client.Client, config *bootstrapv1.KThreesConfig) error {
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": config.UID},
		{"op": "add", "path": "/status", "value": config.Status},
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encoding the KThreesConfig status: %w", err)
	}
	if err := c.Status().Patch(ctx, config, client.RawPatch(types.JSONPatchType, data)); err != nil {
		return fmt.Errorf("patching KThreesConfig status: %w", err)
	}
	return nil
}
