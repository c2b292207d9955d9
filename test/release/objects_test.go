package release

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// byProvider selects what carries p's provider label (the default kustomization's
// labels, which clusterctl also sets on everything it installs).
func byProvider(p installed) client.MatchingLabels {
	return client.MatchingLabels{clusterv1.ProviderNameLabel: p.label}
}

// list lists objects of gvk (a list kind) carrying p's label, in every namespace.
func list(t *testing.T, p installed, gvk schema.GroupVersionKind) []unstructured.Unstructured {
	t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk)
	if err := env.Client.List(context.Background(), l, byProvider(p)); err != nil {
		t.Fatalf("listing %s: %v", gvk.Kind, err)
	}
	return l.Items
}

func checkNamespace(t *testing.T, p installed) {
	t.Helper()
	nss := &corev1.NamespaceList{}
	if err := env.Client.List(context.Background(), nss, byProvider(p)); err != nil {
		t.Fatal(err)
	}
	if len(nss.Items) != 1 || nss.Items[0].Name != p.namespace {
		var names []string
		for _, ns := range nss.Items {
			names = append(names, ns.Name)
		}
		t.Errorf("namespaces of %s: %v, want exactly [%s]", p.label, names, p.namespace)
	}
}

func checkCRDs(t *testing.T, p installed) {
	t.Helper()
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := env.Client.List(context.Background(), crds, byProvider(p)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, crd := range crds.Items {
		names = append(names, crd.Name)
		// CAPI finds the contract version of a referenced kind by this label.
		if got := crd.Labels["cluster.x-k8s.io/v1beta2"]; got != "v1beta2" {
			t.Errorf("CRD %s: contract label %q, want v1beta2", crd.Name, got)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, p.crds) {
		t.Errorf("CRDs of %s: %v, want %v", p.label, names, p.crds)
	}
}

// checkNamespacedObjects requires every namespaced kind a provider ships to be
// present, and every object of them to be in the provider's namespace.
func checkNamespacedObjects(t *testing.T, p installed) {
	t.Helper()
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "ServiceAccountList"},
		{Version: "v1", Kind: "ServiceList"},
		{Group: "apps", Version: "v1", Kind: "DeploymentList"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleList"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBindingList"},
		{Group: "cert-manager.io", Version: "v1", Kind: "IssuerList"},
		{Group: "cert-manager.io", Version: "v1", Kind: "CertificateList"},
	} {
		items := list(t, p, gvk)
		if len(items) != 1 {
			t.Errorf("%d %s of %s, want 1", len(items), gvk.Kind, p.label)
		}
		for _, o := range items {
			if o.GetNamespace() != p.namespace {
				t.Errorf("%s %s/%s is outside %s", gvk.Kind, o.GetNamespace(), o.GetName(), p.namespace)
			}
		}
	}
}

// checkInventory requires clusterctl's record of the installed provider, which later
// clusterctl upgrade, move and delete commands rely on.
func checkInventory(t *testing.T, p installed, version string) {
	t.Helper()
	items := list(t, p, schema.GroupVersionKind{Group: "clusterctl.cluster.x-k8s.io", Version: "v1alpha3", Kind: "ProviderList"})
	if len(items) != 1 {
		t.Fatalf("%d clusterctl Provider records for %s, want 1", len(items), p.label)
	}
	rec := items[0]
	name, _, _ := unstructured.NestedString(rec.Object, "providerName")
	got, _, _ := unstructured.NestedString(rec.Object, "version")
	if rec.GetNamespace() != p.namespace || name != "k3s" || got != version {
		t.Errorf("clusterctl Provider record: %s/%s providerName %q version %q, want %s/... k3s %s",
			rec.GetNamespace(), rec.GetName(), name, got, p.namespace, version)
	}
}
