package release

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/scheme"
	bootstrapwebhooks "github.com/capk3s/capk3s/internal/webhooks/bootstrap"
	controlplanewebhooks "github.com/capk3s/capk3s/internal/webhooks/controlplane"
	"github.com/capk3s/capk3s/test/envtest"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

const injectCAAnnotation = "cert-manager.io/inject-ca-from"

// checkConversionWebhooks requires each CRD of p that serves more than one version
// (exactly p.converted) to convert through the provider's webhook Service at /convert,
// with the CA of the provider's Certificate injected by cert-manager, and every other
// CRD of p to have no conversion webhook and no CA injection.
func checkConversionWebhooks(t *testing.T, p installed, svc corev1.Service, injectFrom string) {
	t.Helper()
	for _, name := range p.crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		want := slices.Contains(p.converted, name)
		if multi := envtest.ServesVersions(crd) > 1; multi != want {
			t.Errorf("CRD %s serves %d versions, but the test expects conversion: %v", name, envtest.ServesVersions(crd), want)
		}
		c := crd.Spec.Conversion
		if !want {
			if c != nil && c.Strategy != apiextensionsv1.NoneConverter {
				t.Errorf("CRD %s serves one version but converts: %+v", name, c)
			}
			if got, ok := crd.Annotations[injectCAAnnotation]; ok {
				t.Errorf("CRD %s without conversion asks for CA injection from %q", name, got)
			}
			continue
		}
		if c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook == nil || c.Webhook.ClientConfig == nil {
			t.Errorf("CRD %s does not convert through a webhook: %+v", name, c)
			continue
		}
		if !slices.Contains(c.Webhook.ConversionReviewVersions, "v1") {
			t.Errorf("CRD %s: conversionReviewVersions %v lack v1", name, c.Webhook.ConversionReviewVersions)
		}
		cc := c.Webhook.ClientConfig
		s := cc.Service
		if cc.URL != nil || s == nil || s.Name != svc.Name || s.Namespace != svc.Namespace ||
			ptr.Deref(s.Path, "") != "/convert" || ptr.Deref(s.Port, 443) != 443 {
			t.Errorf("CRD %s converts at url %v, service %+v; want service %s/%s path /convert port 443",
				name, ptr.Deref(cc.URL, ""), s, svc.Namespace, svc.Name)
		}
		if got := crd.Annotations[injectCAAnnotation]; got != injectFrom {
			t.Errorf("CRD %s: %s %q, want %q", name, injectCAAnnotation, got, injectFrom)
		}
	}
}

// checkConversionServed proves that the installed conversion settings work: it plays
// cert-manager and the kubelet for both providers (a serving certificate for the
// Certificate's DNS names in the Secret it names, its CA injected wherever
// inject-ca-from names that Certificate, an EndpointSlice standing in for the Pod
// behind the webhook Service) and runs each provider's own webhook setup as its
// ServiceAccount. Then v1beta1 objects written in cluster-api-k3s's shape go through
// the apiserver, which converts them at the Services the CRDs name (and admits them
// through the installed webhook configurations, which name the same Services).
func checkConversionServed(t *testing.T) {
	ctx := context.Background()
	// EndpointSlices refuse loopback addresses, so the local servers listen on one of
	// this machine's others.
	host := hostAddress()
	if host == "" {
		t.Skip("this machine has no IPv4 address besides loopback, which EndpointSlices refuse; the installed conversion settings are checked by checkConversionWebhooks only")
	}
	// Each manager's converters read through its own clients, as its ServiceAccount.
	for _, p := range providers {
		serveWebhooksAtService(t, p, host)
	}
	// envtest's webhook configurations for the same kinds stay installed; their local
	// server must answer too.
	startWebhooks(t)
	// The apiserver loads CRD and EndpointSlice changes asynchronously.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return convertsBothKinds(ctx) == nil, nil
	}); err != nil {
		t.Fatalf("v1beta1 objects are not converted through the installed webhooks: %v", convertsBothKinds(ctx))
	}
	ns := env.NewNamespace(t)
	checkLegacyConfig(t, ns)
	checkLegacyControlPlane(t, ns)
}

// serveWebhooksAtService makes p's webhook Service reach a local webhook server that
// p's own SetupWebhooks configured, in a manager that runs as p's ServiceAccount.
func serveWebhooksAtService(t *testing.T, p installed, host string) {
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
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")

	// cert-manager: the Secret, and the CA wherever the Certificate is named.
	certPEM, keyPEM := selfSignedServingCert(t, dnsNames)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: cert.GetNamespace(), Name: secretName},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": certPEM},
	}
	if err := env.Client.Create(ctx, secret); err != nil {
		t.Fatalf("writing the serving certificate Secret: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), secret) })
	injectCA(t, cert.GetNamespace()+"/"+cert.GetName(), certPEM)

	// The kubelet: the Deployment's cert volume, from that Secret, in a directory.
	dir := t.TempDir()
	volume := ""
	for _, v := range deployment(t, p).Spec.Template.Spec.Volumes {
		if v.Name == "cert" && v.Secret != nil {
			volume = v.Secret.SecretName
		}
	}
	mounted := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: volume}, mounted); err != nil {
		t.Fatalf("the Secret the manager mounts: %v", err)
	}
	for name, data := range mounted.Data {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	port := freePort(t, host)
	runWebhookManager(t, p, host, port, dir)

	// The Pod's address, as the EndpointSlice controller would publish it.
	// The control plane's Service also exposes the in-place update extension.
	webhookPort := webhookServicePort(t, svc)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: svc.Namespace, Name: svc.Name + "-release-test",
			Labels: map[string]string{
				discoveryv1.LabelServiceName: svc.Name,
				discoveryv1.LabelManagedBy:   "release-test.capk3s.io",
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{host},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{{
			Name: ptr.To(webhookPort.Name), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP),
		}},
	}
	if err := env.Client.Create(ctx, slice); err != nil {
		t.Fatalf("creating the EndpointSlice of %s: %v", svc.Name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), slice) })
}

// runWebhookManager starts a manager configured by p's Deployment arguments, as p's
// ServiceAccount, serving at host:port with the certificates in dir what p's manager
// registers in its webhook server, and stops it when t ends.
func runWebhookManager(t *testing.T, p installed, host string, port int, dir string) {
	t.Helper()
	opts := parseManagerArgs(t, p, managerContainer(t, deployment(t, p)).Args)
	s, setup := scheme.ForControlPlane(), controlplanewebhooks.SetupWebhooks
	if p.label == bootstrapLabel {
		s, setup = scheme.ForBootstrap(), bootstrapwebhooks.SetupWebhooks
	}
	mgrOpts, err := opts.ManagerOptions(s)
	if err != nil {
		t.Fatal(err)
	}
	// Webhooks are served by every replica, elected or not; electing one here would
	// only compete with checkManagerRuns for the Lease.
	mgrOpts.LeaderElection = false
	mgrOpts.Metrics = metricsserver.Options{BindAddress: "0"}
	mgrOpts.HealthProbeBindAddress = "0"
	mgrOpts.Controller.SkipNameValidation = ptr.To(true)
	mgrOpts.WebhookServer = webhook.NewServer(webhook.Options{
		Host: host, Port: port, CertDir: dir, CertName: opts.WebhookCertName, KeyName: opts.WebhookKeyName,
	})
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: serviceAccount(p),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + p.namespace, "system:authenticated"},
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		t.Fatal(err)
	}
	if err := setup(mgr); err != nil {
		t.Fatalf("%s webhooks: %v", p.label, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("%s webhook manager: %v", p.label, err)
		}
	})
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		select {
		case err := <-stopped:
			return false, fmt.Errorf("manager stopped: %w", err)
		default:
		}
		return mgr.GetWebhookServer().StartedChecker()(nil) == nil, nil
	}); err != nil {
		t.Fatalf("%s webhook server: %v", p.label, err)
	}
}

// injectCA does cert-manager's cainjector's work for the Certificate named from: the
// CA goes into every webhook of the configurations and into the conversion webhook of
// the CRDs that carry inject-ca-from naming it.
func injectCA(t *testing.T, from string, ca []byte) {
	t.Helper()
	ctx := context.Background()
	patch := func(obj client.Object, set func()) {
		if obj.GetAnnotations()[injectCAAnnotation] != from {
			return
		}
		before := obj.DeepCopyObject().(client.Object)
		set()
		if err := env.Client.Patch(ctx, obj, client.MergeFrom(before)); err != nil {
			t.Fatalf("injecting the CA into %s: %v", obj.GetName(), err)
		}
	}
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	mutating := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	validating := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	for _, l := range []client.ObjectList{crds, mutating, validating} {
		if err := env.Client.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	injected := 0
	for i := range crds.Items {
		crd := &crds.Items[i]
		patch(crd, func() {
			if c := crd.Spec.Conversion; c != nil && c.Webhook != nil && c.Webhook.ClientConfig != nil {
				c.Webhook.ClientConfig.CABundle = ca
				injected++
			}
		})
	}
	for i := range mutating.Items {
		m := &mutating.Items[i]
		patch(m, func() {
			for j := range m.Webhooks {
				m.Webhooks[j].ClientConfig.CABundle = ca
			}
		})
	}
	for i := range validating.Items {
		v := &validating.Items[i]
		patch(v, func() {
			for j := range v.Webhooks {
				v.Webhooks[j].ClientConfig.CABundle = ca
			}
		})
	}
	if injected == 0 {
		t.Errorf("no CRD asks for the CA of %s", from)
	}
}

// convertsBothKinds dry-runs the creation of a v1beta1 KThreesConfig and
// KThreesControlPlane, which the apiserver converts (and admits) through the webhooks.
func convertsBothKinds(ctx context.Context) error {
	cfg := legacyConfig()
	cfg.Namespace, cfg.Name, cfg.GenerateName = metav1.NamespaceDefault, "", "probe-"
	cp := legacyControlPlane()
	cp.Namespace, cp.Name, cp.GenerateName = metav1.NamespaceDefault, "", "probe-"
	return errors.Join(env.Client.Create(ctx, cfg, client.DryRunAll), env.Client.Create(ctx, cp, client.DryRunAll))
}

// legacyConfigYAML and legacyControlPlaneYAML are manifests as cluster-api-k3s users
// wrote them for its v1beta1 API.
const (
	legacyConfigYAML = `
apiVersion: bootstrap.cluster.x-k8s.io/v1beta1
kind: KThreesConfig
metadata:
  name: legacy-agent
spec:
  version: v1.35.4+k3s1
  preK3sCommands:
  - echo before
  agentConfig:
    nodeLabels:
    - tier=edge
    nodeName: '{{ ds.meta_data.local_hostname }}'
  files:
  - path: /etc/motd
    content: hello
    permissions: "0644"
`
	legacyControlPlaneYAML = `
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: KThreesControlPlane
metadata:
  name: legacy-control-plane
spec:
  replicas: 3
  version: v1.35.4+k3s1
  infrastructureTemplate:
    apiVersion: infrastructure.sim.capk3s.io/v1beta2
    kind: SimMachineTemplate
    name: legacy-servers
  upgradeAfter: "2026-03-01T12:00:00Z"
  nodeDrainTimeout: 90s
  kthreesConfigSpec:
    serverConfig:
      disableComponents:
      - traefik
    agentConfig:
      nodeName: '{{ ds.meta_data.local_hostname }}'
`
)

func legacyConfig() *bootstrapv1beta1.KThreesConfig {
	c := &bootstrapv1beta1.KThreesConfig{}
	if err := yaml.UnmarshalStrict([]byte(legacyConfigYAML), c); err != nil {
		panic(err)
	}
	return c
}

func legacyControlPlane() *controlplanev1beta1.KThreesControlPlane {
	cp := &controlplanev1beta1.KThreesControlPlane{}
	if err := yaml.UnmarshalStrict([]byte(legacyControlPlaneYAML), cp); err != nil {
		panic(err)
	}
	return cp
}

func checkLegacyConfig(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	written := legacyConfig()
	written.Namespace = ns
	if err := env.Client.Create(ctx, written.DeepCopy()); err != nil {
		t.Fatalf("creating the v1beta1 KThreesConfig: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), written) })
	key := client.ObjectKeyFromObject(written)

	hub := &bootstrapv1.KThreesConfig{}
	if err := env.Client.Get(ctx, key, hub); err != nil {
		t.Fatalf("reading the KThreesConfig at v1beta2: %v", err)
	}
	s := hub.Spec
	if s.Version != "v1.35.4+k3s1" || !slices.Equal(s.PreK3sCommands, []string{"echo before"}) ||
		!slices.Equal(s.AgentConfig.NodeLabels, []string{"tier=edge"}) || s.AgentConfig.NodeName != "{{ ds.meta_data.local_hostname }}" ||
		len(s.Files) != 1 || s.Files[0].Path != "/etc/motd" || s.Files[0].Content != "hello" || s.Files[0].Permissions != "0644" {
		t.Errorf("KThreesConfig at v1beta2: %+v", s)
	}

	back := &bootstrapv1beta1.KThreesConfig{}
	if err := env.Client.Get(ctx, key, back); err != nil {
		t.Fatalf("reading the KThreesConfig at v1beta1: %v", err)
	}
	if !apiequality.Semantic.DeepEqual(back.Spec, written.Spec) {
		t.Errorf("KThreesConfig read back at v1beta1:\n got %+v\nwant %+v", back.Spec, written.Spec)
	}
}

func checkLegacyControlPlane(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	written := legacyControlPlane()
	written.Namespace = ns
	if err := env.Client.Create(ctx, written.DeepCopy()); err != nil {
		t.Fatalf("creating the v1beta1 KThreesControlPlane: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), written) })
	key := client.ObjectKeyFromObject(written)

	hub := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, key, hub); err != nil {
		t.Fatalf("reading the KThreesControlPlane at v1beta2: %v", err)
	}
	wantRef := clusterv1.ContractVersionedObjectReference{
		APIGroup: simv1.GroupVersion.Group, Kind: "SimMachineTemplate", Name: "legacy-servers",
	}
	if got := hub.Spec.MachineTemplate.Spec.InfrastructureRef; got != wantRef {
		t.Errorf("spec.machineTemplate.spec.infrastructureRef = %+v, want %+v", got, wantRef)
	}
	if got := hub.Spec.RolloutAfter; got == nil || !got.Equal(written.Spec.UpgradeAfter) {
		t.Errorf("spec.rolloutAfter = %v, want %v", got, written.Spec.UpgradeAfter)
	}
	if got := hub.Spec.MachineTemplate.Spec.Deletion.NodeDrainTimeoutSeconds; !ptr.Equal(got, ptr.To[int32](90)) {
		t.Errorf("spec.machineTemplate.spec.deletion.nodeDrainTimeoutSeconds = %v, want 90", ptr.Deref(got, -1))
	}
	if !ptr.Equal(hub.Spec.Replicas, ptr.To[int32](3)) || hub.Spec.Version != "v1.35.4+k3s1" ||
		!slices.Equal(hub.Spec.KThreesConfigSpec.ServerConfig.DisableComponents, []string{"traefik"}) ||
		hub.Spec.KThreesConfigSpec.AgentConfig.NodeName != "{{ ds.meta_data.local_hostname }}" {
		t.Errorf("KThreesControlPlane at v1beta2: %+v", hub.Spec)
	}

	back := &controlplanev1beta1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, key, back); err != nil {
		t.Fatalf("reading the KThreesControlPlane at v1beta1: %v", err)
	}
	if !apiequality.Semantic.DeepEqual(back.Spec, written.Spec) {
		t.Errorf("KThreesControlPlane read back at v1beta1:\n got %+v\nwant %+v", back.Spec, written.Spec)
	}

	// Written at v1beta2, a control plane has no v1beta1 apiVersion to restore: the
	// control-plane manager reads the template's CRD for it, with its installed RBAC.
	fresh := hub.DeepCopy()
	fresh.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "fresh-control-plane"}
	if err := env.Client.Create(ctx, fresh); err != nil {
		t.Fatalf("creating a v1beta2 KThreesControlPlane: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), fresh) })
	old := &controlplanev1beta1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(fresh), old); err != nil {
		t.Fatalf("reading a v1beta2 KThreesControlPlane at v1beta1: %v", err)
	}
	if ref := old.Spec.InfrastructureTemplate; ref.APIVersion != simAPIVersion || ref.Kind != "SimMachineTemplate" || ref.Name != "legacy-servers" {
		t.Errorf("infrastructureTemplate = %+v, want %s SimMachineTemplate legacy-servers", ref, simAPIVersion)
	}
}

// restoreLocalConversion points the CRDs that clusterctl init pointed at the
// providers' Services back at envtest's local webhook server, which the rest of the
// package's tests use, since no Pod serves those Services.
func restoreLocalConversion(t *testing.T) {
	t.Helper()
	setConversion(t, env.LocalConversion())
}

// setConversion sets the conversion of capk3s's CRDs that serve more than one version.
func setConversion(t *testing.T, c *apiextensionsv1.CustomResourceConversion) {
	t.Helper()
	ctx := context.Background()
	for _, p := range providers {
		for _, name := range p.converted {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				t.Fatal(err)
			}
			crd.Spec.Conversion = c.DeepCopy()
			if err := env.Client.Update(ctx, crd); err != nil {
				t.Fatalf("setting the conversion of %s: %v", name, err)
			}
		}
	}
}

// selfSignedServingCert is what cert-manager's selfSigned Issuer makes for dnsNames:
// a certificate that is its own CA.
func selfSignedServingCert(t *testing.T, dnsNames []string) (certPEM, keyPEM []byte) {
	t.Helper()
	if len(dnsNames) == 0 {
		t.Fatal("the Certificate has no DNS names")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"capk3s"}},
		DNSNames:              dnsNames,
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// freePort is a TCP port of host, free at the time of the call.
func freePort(t *testing.T, host string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// hostAddress is an IPv4 address of this machine that is neither loopback nor
// link-local (the addresses EndpointSlices refuse), or "" if there is none.
func hostAddress() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.To4() == nil || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() {
			continue
		}
		return n.IP.String()
	}
	return ""
}
