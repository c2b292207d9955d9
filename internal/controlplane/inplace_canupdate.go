package controlplane

import (
	"context"
	"fmt"
	"slices"
	"strings"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/inplaceplan"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"
)

// canUpdateInPlace asks every extension registered for CanUpdateMachine whether it can
// bring the server from its current objects to want. Each extension answers with
// patches to the current objects' specs for the changes it covers; they are applied in
// turn, and the server can be updated in place once the patched current objects equal
// the desired ones. It returns "" when they do, else why not. An error (an extension
// that cannot be reached, answers Failure or sends patches that do not apply) is no
// answer: the caller retries rather than replace a server that might have been
// updated. (A handler registered with failurePolicy Ignore that cannot be reached
// answers for the Runtime SDK client: Success, no patches, so it covers nothing.)
func (r *Reconciler) canUpdateInPlace(ctx context.Context, m *clusterv1.Machine, objs serverObjects, want inPlaceObjects) (string, error) {
	handlers, err := r.RuntimeClient.GetAllExtensions(ctx, runtimehooksv1.CanUpdateMachine, m)
	if err != nil {
		return "", fmt.Errorf("listing the CanUpdateMachine extensions: %w", err)
	}
	if len(handlers) == 0 {
		return "no update extension is registered for CanUpdateMachine", nil
	}
	req, err := inplaceplan.CanUpdateRequest(
		inplaceplan.Objects{Machine: m, Config: normalizedConfig(objs.config), Infra: objs.infra.Object},
		inplaceplan.Objects{Machine: want.machine, Config: normalizedConfig(want.config), Infra: want.infra.Object})
	if err != nil {
		return "", err
	}
	slices.Sort(handlers)
	var differ []string
	for _, h := range handlers {
		resp := &runtimehooksv1.CanUpdateMachineResponse{}
		if err := r.RuntimeClient.CallExtension(ctx, runtimehooksv1.CanUpdateMachine, m, h, req, resp); err != nil {
			return "", fmt.Errorf("calling extension %s: %w", h, err)
		}
		if resp.GetStatus() == runtimehooksv1.ResponseStatusFailure {
			return "", fmt.Errorf("extension %s failed: %s", h, resp.GetMessage())
		}
		if err := inplaceplan.ApplyPatches(req, resp); err != nil {
			return "", fmt.Errorf("applying the patches of extension %s: %w", h, err)
		}
		if differ, err = inplaceplan.Uncovered(req); err != nil {
			return "", err
		}
		if len(differ) == 0 {
			return "", nil
		}
	}
	return "no update extension covers " + strings.Join(differ, ", "), nil
}

// normalizedConfig is c with its spec normalized as the up-to-date decision compares
// it (uptodate.go), so that the extension sees exactly the differences that make the
// server outdated.
func normalizedConfig(c *bootstrapv1.KThreesConfig) *bootstrapv1.KThreesConfig {
	out := c.DeepCopy()
	out.Spec = serverplan.NormalizedConfigSpec(c.Spec)
	return out
}
