package main

import (
	"context"
	"fmt"

	"sigs.k8s.io/cluster-api/core/reconcilers/extensionconfig"
	runtimeclient "sigs.k8s.io/cluster-api/exp/runtime/client"
	"sigs.k8s.io/cluster-api/util/flags"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/capk3s/capk3s/internal/controlplane"
	"github.com/capk3s/capk3s/internal/inplace"
	"github.com/capk3s/capk3s/internal/manager"
	"github.com/capk3s/capk3s/internal/runtimehooks"
)

// inPlaceRuntimeClient is the Runtime SDK client the control plane asks the update
// extensions with when the InPlaceUpdates gate is on (nil otherwise), with CAPI's
// ExtensionConfig controller in read-only mode to fill it: CAPI core discovers the
// extensions and writes the ExtensionConfigs' status, and every other process with a
// client of its own only reads them.
func inPlaceRuntimeClient(ctx context.Context, mgr ctrl.Manager, opts manager.Options, extension inplace.Flags) (runtimeclient.Client, error) {
	if !opts.FeatureGates.Enabled(controlplane.InPlaceUpdatesGate) {
		return nil, nil
	}
	catalog, err := runtimehooks.NewCatalog()
	if err != nil {
		return nil, err
	}
	client, err := runtimehooks.New(runtimehooks.Options{Reader: mgr.GetClient(), Catalog: catalog,
		CertFile: extension.ClientCertFile, KeyFile: extension.ClientKeyFile})
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

// setupInPlaceExtension serves the k3s in-place update extension, only with the
// InPlaceUpdates gate on: with it off nothing may change a node in place, and a port
// that answers anyway is an endpoint for nothing but misuse.
func setupInPlaceExtension(ctx context.Context, mgr ctrl.Manager, opts manager.Options, extension inplace.Flags, workload inplace.WorkloadClients) error {
	if extension.Port <= 0 {
		return nil
	}
	if !opts.FeatureGates.Enabled(controlplane.InPlaceUpdatesGate) {
		ctrl.LoggerFrom(ctx).Info("Not serving the in-place update extension: the InPlaceUpdates feature gate is off", "port", extension.Port)
		return nil
	}
	tlsOpts, _, err := flags.GetManagerOptions(opts.Diagnostics)
	if err != nil {
		return fmt.Errorf("runtime extension TLS options: %w", err)
	}
	if err := inplace.SetupExtension(ctx, mgr, extension.Options(inplace.WebhookCert{
		Dir: opts.WebhookCertDir, CertName: opts.WebhookCertName, KeyName: opts.WebhookKeyName,
	}, tlsOpts, workload)); err != nil {
		return fmt.Errorf("setting up the in-place update extension: %w", err)
	}
	return nil
}
