package release

import (
	"context"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// checkWebhooks follows the chain that makes a provider's webhooks reachable in a
// real cluster: each webhook names the provider's Service; the Certificate is valid
// for that Service's DNS name; cert-manager is told to inject that Certificate's CA;
// and the manager mounts the Secret the Certificate is written to. The CRDs that serve
// v1beta1 convert through the same Service, with the same CA.
func checkWebhooks(t *testing.T, p installed) {
	t.Helper()
	ctx := context.Background()
	svcs := &corev1.ServiceList{}
	if err := env.Client.List(ctx, svcs, byProvider(p)); err != nil || len(svcs.Items) != 1 {
		t.Fatalf("the webhook Service of %s: %d found, %v", p.label, len(svcs.Items), err)
	}
	svc := svcs.Items[0]
	certs := list(t, p, schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "CertificateList"})
	if len(certs) != 1 {
		t.Fatalf("%d Certificates of %s, want 1", len(certs), p.label)
	}
	cert := certs[0]
	injectFrom := cert.GetNamespace() + "/" + cert.GetName()

	mutating := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	validating := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := env.Client.List(ctx, mutating, byProvider(p)); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.List(ctx, validating, byProvider(p)); err != nil {
		t.Fatal(err)
	}
	if len(mutating.Items) != 1 || len(validating.Items) != 1 {
		t.Fatalf("%d mutating and %d validating webhook configurations, want 1 each", len(mutating.Items), len(validating.Items))
	}
	var services []*admissionregistrationv1.ServiceReference
	for _, w := range mutating.Items[0].Webhooks {
		services = append(services, w.ClientConfig.Service)
	}
	for _, w := range validating.Items[0].Webhooks {
		services = append(services, w.ClientConfig.Service)
	}
	for _, s := range services {
		if s == nil || s.Name != svc.Name || s.Namespace != svc.Namespace {
			t.Errorf("a webhook calls service %+v, want %s/%s", s, svc.Namespace, svc.Name)
		}
	}
	for _, annotations := range []map[string]string{mutating.Items[0].Annotations, validating.Items[0].Annotations} {
		if got := annotations["cert-manager.io/inject-ca-from"]; got != injectFrom {
			t.Errorf("cert-manager.io/inject-ca-from %q, want %q", got, injectFrom)
		}
	}

	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	if want := svc.Name + "." + svc.Namespace + ".svc"; !slices.Contains(dnsNames, want) {
		t.Errorf("Certificate %s is for %v, not the webhook Service %s", cert.GetName(), dnsNames, want)
	}
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	issuers := list(t, p, schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "IssuerList"})
	if len(issuers) != 1 || issuers[0].GetName() != issuer {
		t.Errorf("Certificate issuer %q is not the provider's Issuer", issuer)
	}
	secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	mounted := ""
	for _, v := range deployment(t, p).Spec.Template.Spec.Volumes {
		if v.Name == "cert" && v.Secret != nil {
			mounted = v.Secret.SecretName
		}
	}
	if secret == "" || mounted != secret {
		t.Errorf("the manager mounts Secret %q, the Certificate is written to %q", mounted, secret)
	}
	checkConversionWebhooks(t, p, svc, injectFrom)
}
