package bootstrap

import (
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/crdmigration"
)

// The CRD migrator (internal/crdmigration) watches CRDs by metadata and rewrites this
// provider's objects and CRD status only; the rules name the CRDs below.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions;customresourcedefinitions/status,verbs=update;patch,resourceNames=kthreesconfigs.bootstrap.cluster.x-k8s.io;kthreesconfigtemplates.bootstrap.cluster.x-k8s.io
// +kubebuilder:rbac:groups=bootstrap.cluster.x-k8s.io,resources=kthreesconfigtemplates,verbs=get;list;watch;patch;update

// MigratedKinds are the bootstrap provider's kinds the CRD migrator keeps at the
// storage version; the value says whether the kind has a status subresource.
var MigratedKinds = crdmigration.Kinds{
	&bootstrapv1.KThreesConfig{}:         true,
	&bootstrapv1.KThreesConfigTemplate{}: false,
}
