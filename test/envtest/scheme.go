package envtest

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	addonsv1beta1 "sigs.k8s.io/cluster-api/api/addons/v1beta1" //nolint:staticcheck // CAPI's webhooks still convert from it
	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1" //nolint:staticcheck // CAPI's webhooks still convert from it
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ipamv1alpha1 "sigs.k8s.io/cluster-api/api/ipam/v1alpha1" //nolint:staticcheck // CAPI's webhooks still convert from it
	ipamv1beta1 "sigs.k8s.io/cluster-api/api/ipam/v1beta1"   //nolint:staticcheck // CAPI's webhooks still convert from it
	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	runtimev1alpha1 "sigs.k8s.io/cluster-api/api/runtime/v1alpha1" //nolint:staticcheck // CAPI's webhooks still convert from it
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	netnsv1 "github.com/capk3s/capk3s/test/realk3s/api/v1beta2"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// NewScheme returns a scheme with Kubernetes' built-in kinds, CRDs, CAPI core and
// both capk3s API groups (with their deprecated v1beta1, which the conversion webhook
// decodes) and the simulator's: everything the harness's client reads and writes.
// CAPI's other groups and older versions are there as in CAPI's manager, whose
// webhooks (stack.Options.CAPIWebhooks) convert from them.
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		clusterv1.AddToScheme,
		clusterv1beta1.AddToScheme,
		addonsv1.AddToScheme,
		addonsv1beta1.AddToScheme,
		ipamv1.AddToScheme,
		ipamv1beta1.AddToScheme,
		ipamv1alpha1.AddToScheme,
		runtimev1.AddToScheme,
		runtimev1alpha1.AddToScheme,
		bootstrapv1.AddToScheme,
		bootstrapv1beta1.AddToScheme,
		controlplanev1.AddToScheme,
		controlplanev1beta1.AddToScheme,
		simv1.AddToScheme,
		netnsv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			// Only a programming error (a kind registered twice differently) gets here.
			panic(err)
		}
	}
	return scheme
}
