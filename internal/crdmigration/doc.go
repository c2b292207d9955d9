// Package crdmigration runs CAPI's CRD migrator for capk3s's own CRDs, as CAPI's
// providers do for theirs. Management clusters that ran an older provider still hold
// objects stored at v1beta1; the migrator rewrites each one at the storage version
// (v1beta2) through the conversion webhook and then sets the CRD's
// status.storedVersions to that version alone, so that nobody has to edit
// storedVersions by hand and v1beta1 can one day stop being served. It also drops
// managedFields entries of versions that are no longer served.
package crdmigration
