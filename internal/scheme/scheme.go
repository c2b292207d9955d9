package scheme

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// ForBootstrap returns the scheme of the bootstrap manager. The deprecated v1beta1
// kinds are there for the conversion webhook, which decodes and encodes them;
// controllers only ever read and write v1beta2.
func ForBootstrap() *runtime.Scheme {
	return build(bootstrapv1.AddToScheme, bootstrapv1beta1.AddToScheme)
}

// ForControlPlane returns the scheme of the control-plane manager. It also
// holds the bootstrap kinds because the control plane creates KThreesConfigs
// for the Machines it owns.
func ForControlPlane() *runtime.Scheme {
	return build(bootstrapv1.AddToScheme, bootstrapv1beta1.AddToScheme,
		controlplanev1.AddToScheme, controlplanev1beta1.AddToScheme)
}

// build panics on error: AddToScheme only fails on conflicting
// registrations, a programming error that no caller could recover from.
func build(own ...func(*runtime.Scheme) error) *runtime.Scheme {
	s := runtime.NewScheme()
	common := []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		clusterv1.AddToScheme,
		// ExtensionConfigs, which the Runtime SDK client and CAPI's ExtensionConfig
		// reconciler read to find the registered extensions.
		runtimev1.AddToScheme,
	}
	for _, add := range append(common, own...) {
		utilruntime.Must(add(s))
	}
	return s
}
