package main

import (
	"context"
	"fmt"

	"sigs.k8s.io/cluster-api/core/reconcilers/extensionconfig"
	runtimeclient "sigs.k8s.io/cluster-api/exp/runtime/client"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/capk3s/capk3s/internal/controlplane"
	"github.com/capk3s/capk3s/internal/manager"
	"github.com/capk3s/capk3s/internal/runtimehooks"
)

// inPlaceRuntimeClient is the Runtime SDK client the control plane asks the update
// extensions with when the InPlaceUpdates gate is on (nil otherwise), with CAPI's
// ExtensionConfig controller in read-only mode to fill it: CAPI core discovers the
// extensions and writes the ExtensionConfigs' status, and every other process with a
// client of its own only reads them.
func inPlaceRuntimeClient(ctx context.Context, mgr ctrl.Manager, opts manager.Options) (runtimeclient.Client, error) {
	if !opts.FeatureGates.Enabled(controlplane.InPlaceUpdatesGate) {
		return nil, nil
	}
	catalog, err := runtimehooks.NewCatalog()
	if err != nil {
		return nil, err
	}
	client, err := runtimehooks.New(runtimehooks.Options{Reader: mgr.GetClient(), Catalog: catalog})
	if err != nil {
		return nil, fmt.Errorf("creating the Runtime SDK client: %w", err)
	}
	if err := (&extensionconfig.Reconciler{
		Client:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		RuntimeClient:    client,
		ReadOnly:         true,
		WatchFilterValue: opts.WatchFilterValue,
	}).SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
		return nil, fmt.Errorf("setting up the ExtensionConfig controller: %w", err)
	}
	return client, nil
}
