package controlplane

import (
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/crdmigration"
)

// The CRD migrator (internal/crdmigration) rewrites this provider's objects and CRD
// status only; the rules name the CRDs below (reading CRDs is granted in controller.go).
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions;customresourcedefinitions/status,verbs=update;patch,resourceNames=kthreescontrolplanes.controlplane.cluster.x-k8s.io;kthreescontrolplanetemplates.controlplane.cluster.x-k8s.io
// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=kthreescontrolplanetemplates,verbs=get;list;watch;patch;update

// MigratedKinds are the control-plane provider's kinds the CRD migrator keeps at the
// storage version; the value says whether the kind has a status subresource.
var MigratedKinds = crdmigration.Kinds{
	&controlplanev1.KThreesControlPlane{}:         true,
	&controlplanev1.KThreesControlPlaneTemplate{}: false,
}
