package controlplane

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/conversion"
)

// SetupWebhooks registers the defaulting and validating webhooks of
// KThreesControlPlane, KThreesControlPlaneTemplate and KThreesEtcdSnapshot, and the validating webhook of
// the KThreesControlPlane scale subresource, with the manager's webhook server at the
// paths the +kubebuilder:webhook markers of this package declare, and the converter of
// KThreesControlPlane between the deprecated v1beta1 and v1beta2 at /convert, where
// its CRD's conversion webhook points (KThreesControlPlaneTemplate serves v1beta2 only).
//
// Down-conversion writes v1beta1's infrastructureTemplate.apiVersion, which v1beta2
// does not store; when the object carries no v1beta1 data to restore it from, it is
// read from the template kind's CRD through the manager's client: metadata only and
// cached, as Cluster API's own providers read it. That metadata informer is the one
// this webhook setup lets start, because a list read at v1beta1 converts every item
// and CRDs rarely change. The defaulting webhook rewrites an earlier release's
// v1beta1 data with the same lookups.
//
// Up-conversion takes the fields it never shows at v1beta1 (extraConfig, bootCommands:
// they may carry credentials) from the stored object, read through the manager's API
// reader: a cache could be behind the write being converted.
//
// The converter and the defaulter carry these lookups (conversion.Lookups), so
// managers sharing a process (the sandbox, tests) each convert with their own.
//
// The KThreesEtcdRestore webhook reads the Cluster, its control plane and the other
// restores through the manager's API reader, for the same reason.
//
// The scale webhook reads the control plane it scales through the manager's API
// reader, not its cache: a webhook must not start informers, and a stale cache could
// let a scale through that the stored rollout strategy forbids.
func SetupWebhooks(mgr ctrl.Manager) error {
	lookups := conversion.Lookups{
		APIVersion: conversion.APIVersionFromCRDs(mgr.GetClient()),
		Stored:     mgr.GetAPIReader(),
	}
	cp := &KThreesControlPlane{Conversion: lookups}
	if err := ctrl.NewWebhookManagedBy(mgr, &controlplanev1.KThreesControlPlane{}).
		WithDefaulter(cp).
		WithValidator(cp).
		WithConverter(lookups.KThreesControlPlane()).
		Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &controlplanev1.KThreesControlPlaneTemplate{}).
		WithDefaulter(&KThreesControlPlaneTemplate{}).
		WithValidator(&KThreesControlPlaneTemplate{}).
		Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &controlplanev1.KThreesEtcdSnapshot{}).
		WithDefaulter(&KThreesEtcdSnapshot{}).
		WithValidator(&KThreesEtcdSnapshot{}).
		Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &controlplanev1.KThreesEtcdRestore{}).
		WithValidator(&KThreesEtcdRestore{Reader: mgr.GetAPIReader()}).
		Complete(); err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(scaleValidationPath, &webhook.Admission{
		Handler: &ScaleValidator{Reader: mgr.GetAPIReader()},
	})
	return nil
}
