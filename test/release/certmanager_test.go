package release

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// installCertManagerAPI installs cert-manager's Issuer and Certificate kinds, schemaless,
// without cert-manager itself. That is all clusterctl's cert-manager check needs (it
// creates and deletes a test Issuer and Certificate), and all the providers' components
// need to be stored; nothing here issues certificates, and no network is used.
func installCertManagerAPI(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, kind := range []string{"Issuer", "Certificate"} {
		crd := certManagerCRD(kind)
		if err := env.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating the %s CRD: %v", kind, err)
		}
		if err := waitEstablished(ctx, crd.Name); err != nil {
			t.Fatal(err)
		}
	}
}

func certManagerCRD(kind string) *apiextensionsv1.CustomResourceDefinition {
	plural := map[string]string{"Issuer": "issuers", "Certificate": "certificates"}[kind]
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".cert-manager.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "cert-manager.io",
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:                   "object",
					XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

func waitEstablished(ctx context.Context, name string) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}
