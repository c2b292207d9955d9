package ownerref

import (
	"errors"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// kthreesConfigGroupKind is matched without a version so that references
// written by older releases (v1beta1 and earlier) are dropped as well.
var kthreesConfigGroupKind = schema.GroupKind{Group: bootstrapv1.GroupVersion.Group, Kind: "KThreesConfig"}

// refKey identifies the object a reference points at. The version is left
// out because one object is served under several versions, and the UID is
// left out because two references that differ only in UID cannot both be
// right: one of them points at a deleted predecessor.
type refKey struct {
	group, kind, name string
}

func keyOf(ref metav1.OwnerReference) refKey {
	gk := groupKindOf(ref)
	return refKey{group: gk.Group, kind: gk.Kind, name: ref.Name}
}

func groupKindOf(ref metav1.OwnerReference) schema.GroupKind {
	return schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
}

// TakeOver makes owner the controller of obj, keeping every other owner
// reference except references to KThreesConfigs, which are all dropped
// (controlling or not). It returns whether obj's owner references changed;
// when false, obj is untouched and callers must not write.
//
// The owner's kind is taken from scheme, never from its TypeMeta, which is
// empty on objects read with a typed client. The owner must have a name and
// a UID. On error obj is left untouched.
//
// In the result:
//   - exactly one reference points at owner (same group, kind and name); it
//     carries the scheme's apiVersion and owner's current UID, with
//     Controller and BlockOwnerDeletion set. An existing reference to owner
//     is updated in place (a stale UID is replaced); otherwise the reference
//     is appended;
//   - a former controller that is not owner and not a KThreesConfig (a
//     Cluster, another KThreesControlPlane) is kept as a non-controller
//     reference (Controller set to nil), so no other owner is lost;
//
// An object controlled by anything else (see ExternalController) is refused
// with an *ExternallyControlledError and left untouched.
//   - other references keep their order; if several point at the same
//     group, kind and name, only the first is kept.
func TakeOver(obj metav1.Object, owner client.Object, scheme *runtime.Scheme) (changed bool, err error) {
	// controllerutil.SetControllerReference refuses with an AlreadyOwnedError
	// while another object is the controller, and it knows nothing about
	// KThreesConfig references, which must go because they are what let the
	// garbage collector delete the token. So this function only clears the
	// way (drops KThreesConfig references, demotes a foreign controller,
	// collapses duplicates) and leaves writing owner's reference to
	// SetControllerReference.
	gvk, err := ownerGVK(owner, scheme)
	if err != nil {
		return false, err
	}
	if ref := ExternalController(obj); ref != nil {
		return false, &ExternallyControlledError{Controller: *ref}
	}
	ownerKey := refKey{group: gvk.Group, kind: gvk.Kind, name: owner.GetName()}

	current := obj.GetOwnerReferences()
	// A fresh slice: SetControllerReference updates an existing reference in
	// place, which must not reach the backing array the caller still holds.
	cleared := make([]metav1.OwnerReference, 0, len(current)+1)
	seen := make(map[refKey]bool, len(current))
	for _, ref := range current {
		key := keyOf(ref)
		if seen[key] {
			continue
		}
		// Owner is matched before the KThreesConfig rule so that the owner's
		// own reference is never the one thrown away.
		if key != ownerKey {
			if groupKindOf(ref) == kthreesConfigGroupKind {
				continue
			}
			if ref.Controller != nil && *ref.Controller {
				ref.Controller = nil
			}
		}
		seen[key] = true
		cleared = append(cleared, ref)
	}

	// A scratch object keeps obj untouched should SetControllerReference
	// fail, e.g. on a cross-namespace owner.
	scratch := &metav1.ObjectMeta{Namespace: obj.GetNamespace(), OwnerReferences: cleared}
	if err := controllerutil.SetControllerReference(owner, scratch, scheme); err != nil {
		return false, err
	}
	desired := scratch.GetOwnerReferences()
	if reflect.DeepEqual(current, desired) {
		return false, nil
	}
	obj.SetOwnerReferences(desired)
	return true, nil
}

// IsControlledBy reports whether obj's controller reference points at owner,
// matching group, kind, name and UID, with owner's kind taken from scheme.
// It says nothing about other references: an object controlled by owner may
// still carry KThreesConfig references that TakeOver would drop.
func IsControlledBy(obj metav1.Object, owner client.Object, scheme *runtime.Scheme) (bool, error) {
	gvk, err := ownerGVK(owner, scheme)
	if err != nil {
		return false, err
	}
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		return false, nil
	}
	return groupKindOf(*ref) == gvk.GroupKind() &&
		ref.Name == owner.GetName() &&
		ref.UID == owner.GetUID(), nil
}

// ownerGVK rejects owners a reference cannot be built for: without a UID
// the garbage collector cannot resolve the reference, and without a name it
// cannot be matched against existing references.
func ownerGVK(owner client.Object, scheme *runtime.Scheme) (schema.GroupVersionKind, error) {
	if owner == nil {
		return schema.GroupVersionKind{}, errors.New("owner is nil")
	}
	if owner.GetName() == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("owner %T has no name", owner)
	}
	if owner.GetUID() == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("owner %T %q has no UID", owner, owner.GetName())
	}
	gvk, err := apiutil.GVKForObject(owner, scheme)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("kind of owner %q: %w", owner.GetName(), err)
	}
	return gvk, nil
}
