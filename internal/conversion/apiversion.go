package conversion

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gobuffalo/flect"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// v1beta1's infrastructureTemplate is an ObjectReference with an apiVersion, where
// v1beta2 names only the API group (the Cluster API v1beta2 contract's reference).
// Converting down, the version comes from the kept v1beta1 data when there is any,
// and otherwise from the template CRD: the newest version it lists for the contract,
// as Cluster API itself resolves a contract-versioned reference. Cluster API's helper
// for this is internal to its module, so this is our own, reading only the CRD's
// metadata (from the manager's cache).

// APIVersionGetter returns the apiVersion that a reference to a kind of the given
// group should carry.
type APIVersionGetter func(ctx context.Context, gk schema.GroupKind) (string, error)

// APIVersionFromCRDs reads the kind's CRD (its metadata only) and returns
// group/version for the newest version its Cluster API contract label lists.
func APIVersionFromCRDs(c client.Reader) APIVersionGetter {
	return func(ctx context.Context, gk schema.GroupKind) (string, error) {
		crd := &metav1.PartialObjectMetadata{}
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		name := fmt.Sprintf("%s.%s", flect.Pluralize(strings.ToLower(gk.Kind)), gk.Group)
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return "", fmt.Errorf("reading CRD %s for the apiVersion of %s: %w", name, gk.Kind, err)
		}
		// The v1beta2 contract's label first; a provider still on the v1beta1
		// contract has only that one.
		label, ok := crd.GetLabels()[clusterv1.GroupVersion.String()]
		if !ok {
			label = crd.GetLabels()[clusterv1.GroupVersion.Group+"/v1beta1"]
		}
		v, err := newestContractVersion(label)
		if err != nil {
			return "", fmt.Errorf("CRD %s: %w", name, err)
		}
		return schema.GroupVersion{Group: gk.Group, Version: v}.String(), nil
	}
}

// newestContractVersion picks the newest of a contract label's versions ("v1beta1_v1beta2").
func newestContractVersion(label string) (string, error) {
	if label == "" {
		return "", fmt.Errorf("no %s (or v1beta1) contract label", clusterv1.GroupVersion.String())
	}
	versions := strings.Split(label, "_")
	sort.Slice(versions, func(i, j int) bool {
		return version.CompareKubeAwareVersionStrings(versions[i], versions[j]) > 0
	})
	return versions[0], nil
}
