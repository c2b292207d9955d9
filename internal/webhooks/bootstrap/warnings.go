package bootstrap

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// The schema keeps some of cluster-api-k3s's fields that capk3s has no use for, so
// that its manifests are neither refused by strict clients nor pruned for the others.
// Keeping a field must not let the user believe it acts: each one that is set gets an
// admission warning naming it and saying why nothing reads it. The apiserver may cut
// a warning after 256 characters, so each stays below that.

// etcdProxyImageWarning says why serverConfig.etcdProxyImage does nothing: the image
// ran cluster-api-k3s's way into the workload cluster's etcd, and capk3s needs none.
const etcdProxyImageWarning = "is ignored: capk3s runs no etcd proxy; it never connects to etcd and leaves membership changes to k3s's own etcd controller"

// IgnoredFieldWarnings returns a warning for each field of spec, at fldPath, that is
// accepted for cluster-api-k3s's manifests but ignored. It is exported so the
// control-plane webhooks warn alike about the KThreesConfigSpec they embed.
func IgnoredFieldWarnings(spec *bootstrapv1.KThreesConfigSpec, fldPath *field.Path) admission.Warnings {
	warnings := admission.Warnings(K3sVersionWarnings(spec, spec.Version, fldPath.Child("version")))
	if spec.ServerConfig.DeprecatedEtcdProxyImage != "" { //nolint:staticcheck // warning about the deprecated field is this function's job
		warnings = append(warnings, fldPath.Child("serverConfig", "etcdProxyImage").String()+" "+etcdProxyImageWarning)
	}
	// Not an ignored field, but every caller that warns about those warns about this.
	return append(warnings, CloudControllerWarnings(spec, fldPath)...)
}
