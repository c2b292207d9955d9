package ownerref

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// Kinds are matched without a version, so that references written by older
// releases (v1beta1 and earlier) count as well.
var (
	kthreesControlPlaneGroupKind = schema.GroupKind{Group: controlplanev1.GroupVersion.Group, Kind: "KThreesControlPlane"}
	clusterGroupKind             = schema.GroupKind{Group: clusterv1.GroupVersion.Group, Kind: "Cluster"}
)

// isK3sProviderKind: the kinds of capk3s and cluster-api-k3s that owned cluster
// Secrets.
func isK3sProviderKind(gk schema.GroupKind) bool {
	return gk == kthreesControlPlaneGroupKind || gk == kthreesConfigGroupKind
}

// isReplaceableController: the controllers the control plane may take an object
// from. Besides the k3s provider kinds, the Cluster: the first server's bootstrap
// and older releases gave it cluster Secrets.
func isReplaceableController(gk schema.GroupKind) bool {
	return isK3sProviderKind(gk) || gk == clusterGroupKind
}

// ExternalController returns obj's controller reference when it points at
// something other than a Cluster, a KThreesControlPlane or a KThreesConfig (any
// version), and nil otherwise. Such an object is managed by other software — a
// SealedSecret, an ExternalSecret, a user's own controller — which rewrites it
// from its own source: taking it over would start a fight between two
// controllers, and garbage collection would then follow the control plane. So
// the control plane uses such an object as it is and never writes it.
//
// This is the one rule for every object the control plane might take over (the
// join token, the CA and kubeconfig Secrets); TakeOver enforces it.
func ExternalController(obj metav1.Object) *metav1.OwnerReference {
	// The apiserver allows one controller reference per object; looking at all
	// of them keeps an odd list from hiding an external one behind ours.
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller && !isReplaceableController(groupKindOf(ref)) {
			return ref.DeepCopy()
		}
	}
	return nil
}

// ExternallyControlledError is TakeOver's refusal to take an object from
// another software's controller.
type ExternallyControlledError struct {
	Controller metav1.OwnerReference
}

func (e *ExternallyControlledError) Error() string {
	return fmt.Sprintf("controlled by %s %s (%s), neither the Cluster nor a k3s provider object; it is left to that controller",
		e.Controller.Kind, e.Controller.Name, e.Controller.APIVersion)
}

// MadeByProvider tells a cluster Secret (a CA, the kubeconfig) that a provider
// made, and that the control plane may therefore take over, from one the user
// provided, whose owners stay as they are (deleting the control plane must not
// delete it). CAPI's code gives its Secrets the type cluster.x-k8s.io/secret,
// and KCP adopts only those; users create theirs as kubernetes.io/tls or Opaque.
// cluster-api-k3s, though, wrote its kubeconfig Secrets without a type (Opaque),
// so a Secret that references a KThreesControlPlane or a KThreesConfig (any
// version) counts as a provider's too. Either way, a Secret that other software
// controls (ExternalController) is not a provider's.
func MadeByProvider(s *corev1.Secret) bool {
	if ExternalController(s) != nil {
		return false
	}
	if s.Type == clusterv1.ClusterSecretType {
		return true
	}
	for _, ref := range s.OwnerReferences {
		if isK3sProviderKind(groupKindOf(ref)) {
			return true
		}
	}
	return false
}
