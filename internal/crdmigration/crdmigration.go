package crdmigration

import (
	"context"
	"fmt"

	"sigs.k8s.io/cluster-api/controllers/crdmigrator"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// Kinds are a provider's objects to migrate, each with whether it has a status
// subresource. Objects with one are rewritten through it: webhooks are not called on
// status writes, so a stored object that today's admission would refuse (written
// before a rule existed) is still migrated instead of blocking the migration.
type Kinds map[client.Object]bool

// Setup registers the migrator for kinds on mgr, skipping the phases named in skip.
// It reads the objects live (not from the cache): the migrator runs once per CRD
// change, and informers for every kind would cost memory for nothing.
func Setup(ctx context.Context, mgr ctrl.Manager, kinds Kinds, skip []string) error {
	config := make(map[client.Object]crdmigrator.ByObjectConfig, len(kinds))
	for obj, hasStatus := range kinds {
		config[obj] = crdmigrator.ByObjectConfig{UseStatusForStorageVersionMigration: hasStatus}
	}
	phases := make([]crdmigrator.Phase, 0, len(skip))
	for _, p := range skip {
		phases = append(phases, crdmigrator.Phase(p))
	}
	m := &crdmigrator.CRDMigrator{
		Client:                 mgr.GetClient(),
		APIReader:              mgr.GetAPIReader(),
		SkipCRDMigrationPhases: phases,
		Config:                 config,
	}
	// One at a time, as CAPI's providers run it: the migration patches every object of
	// a kind, and doing several kinds at once would only load the apiserver more.
	if err := m.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 1}); err != nil {
		return fmt.Errorf("setting up the CRD migrator: %w", err)
	}
	return nil
}
