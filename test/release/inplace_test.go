package release

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/yamlprocessor"
	"sigs.k8s.io/yaml"

	"github.com/capk3s/capk3s/internal/controlplane"
	"github.com/capk3s/capk3s/internal/inplace"
)

// inplaceExtensionFile is the release's opt-in ExtensionConfig of the in-place update
// extension.
const inplaceExtensionFile = "control-plane-inplace-extension.yaml"

// webhookServicePort is the port of the webhook Service that reaches the webhook
// server (the control plane's Service also has the extension's).
func webhookServicePort(t *testing.T, svc corev1.Service) corev1.ServicePort {
	t.Helper()
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.String() == "webhook-server" {
			return p
		}
	}
	t.Fatalf("webhook Service %s has no port to webhook-server: %+v", svc.Name, svc.Spec.Ports)
	return corev1.ServicePort{}
}

// checkInPlaceExtension follows the chain that lets CAPI reach the control-plane
// manager's in-place update extension: the manager serves it (the flag its binary
// takes, on a named container port), the webhook Service exposes that port, and the
// release's ExtensionConfig, named as the extension's handlers expect, calls that
// Service port with the CA of the Secret the manager serves with.
func checkInPlaceExtension(t *testing.T, p installed, release string) {
	t.Helper()
	d := deployment(t, p)
	c := managerContainer(t, d)
	_, ext := parseArgs(t, p, c.Args)
	if ext.Port == 0 {
		t.Fatalf("the control-plane manager does not serve the in-place update extension: args %v", c.Args)
	}
	portName := ""
	for _, cp := range c.Ports {
		if cp.ContainerPort == int32(ext.Port) {
			portName = cp.Name
		}
	}
	if portName == "" {
		t.Errorf("no container port for the extension's port %d: %+v", ext.Port, c.Ports)
	}
	svcs := &corev1.ServiceList{}
	if err := env.Client.List(context.Background(), svcs, byProvider(p)); err != nil || len(svcs.Items) != 1 {
		t.Fatalf("the webhook Service: %d, %v", len(svcs.Items), err)
	}
	svc := svcs.Items[0]
	var svcPort *corev1.ServicePort
	for i, sp := range svc.Spec.Ports {
		if sp.TargetPort.String() == portName {
			svcPort = &svc.Spec.Ports[i]
		}
	}
	if svcPort == nil {
		t.Fatalf("Service %s has no port to container port %q: %+v", svc.Name, portName, svc.Spec.Ports)
	}

	raw, err := os.ReadFile(filepath.Join(release, inplaceExtensionFile))
	if err != nil {
		t.Fatalf("the release lacks %s: %v", inplaceExtensionFile, err)
	}
	ec := &runtimev1.ExtensionConfig{}
	if err := yaml.UnmarshalStrict(raw, ec); err != nil {
		t.Fatalf("%s: %v", inplaceExtensionFile, err)
	}
	if ec.Kind != "ExtensionConfig" || ec.APIVersion != runtimev1.GroupVersion.String() || ec.Name != inplace.ExtensionConfigName {
		t.Errorf("%s is %s %s %q, want %s ExtensionConfig %q", inplaceExtensionFile, ec.APIVersion, ec.Kind, ec.Name,
			runtimev1.GroupVersion, inplace.ExtensionConfigName)
	}
	s := ec.Spec.ClientConfig.Service
	if s.Name != svc.Name || s.Namespace != svc.Namespace || ptr.Deref(s.Port, 443) != svcPort.Port {
		t.Errorf("the ExtensionConfig calls service %s/%s port %d, want %s/%s port %d",
			s.Namespace, s.Name, ptr.Deref(s.Port, 443), svc.Namespace, svc.Name, svcPort.Port)
	}
	certs := list(t, p, schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "CertificateList"})
	if len(certs) != 1 {
		t.Fatalf("%d Certificates, want 1", len(certs))
	}
	checkExtensionClientAuth(t, c, ext, certs[0])
	secret, _, _ := unstructured.NestedString(certs[0].Object, "spec", "secretName")
	if want := certs[0].GetNamespace() + "/" + secret; ec.Annotations[runtimev1.InjectCAFromSecretAnnotation] != want {
		t.Errorf("%s %q, want %q (the Secret cert-manager writes)", runtimev1.InjectCAFromSecretAnnotation,
			ec.Annotations[runtimev1.InjectCAFromSecretAnnotation], want)
	}
}

// checkExtensionClientAuth follows the chain that authenticates the extension's
// callers: the manager presents the webhook certificate as its client certificate
// (so the Certificate asks for client auth), and the extension trusts that
// certificate's CA and the optional Secret of the user's CAs, both mounted.
func checkExtensionClientAuth(t *testing.T, c corev1.Container, ext inplace.Flags, cert unstructured.Unstructured) {
	t.Helper()
	usages, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "usages")
	if !slices.Contains(usages, "client auth") || !slices.Contains(usages, "server auth") {
		t.Errorf("Certificate %s usages %v, want server auth and client auth", cert.GetName(), usages)
	}
	mounted := func(path string) string {
		for _, m := range c.VolumeMounts {
			if dir := strings.TrimSuffix(m.MountPath, "/"); path == dir || strings.HasPrefix(path, dir+"/") {
				return m.Name
			}
		}
		return ""
	}
	if mounted(ext.ClientCertFile) != "cert" || mounted(ext.ClientKeyFile) != "cert" ||
		filepath.Base(ext.ClientCertFile) != "tls.crt" || filepath.Base(ext.ClientKeyFile) != "tls.key" {
		t.Errorf("client certificate %q and key %q, want tls.crt and tls.key of the cert volume", ext.ClientCertFile, ext.ClientKeyFile)
	}
	trustsOwn, trustsUser := false, false
	for _, f := range ext.ClientCAFiles {
		switch mounted(f) {
		case "cert":
			trustsOwn = trustsOwn || filepath.Base(f) == "ca.crt"
		case "":
			t.Errorf("client CA file %s is on no volume", f)
		default:
			trustsUser = true
		}
	}
	if !trustsOwn || !trustsUser {
		t.Errorf("client CA files %v, want the cert volume's ca.crt and the user's optional Secret", ext.ClientCAFiles)
	}
}

// The control-plane manager's InPlaceUpdates gate follows clusterctl's
// EXP_IN_PLACE_UPDATES with CAPI core's default, as KCP's does: one variable turns
// in-place updates on or off on both sides, so that capk3s does not mark servers that
// CAPI's Machine controller will never update.
func TestInPlaceGateFollowsClusterAPI(t *testing.T) {
	release := buildRelease(t)
	capiDir, _ := capiModule(t)
	want := featureGate(t, managerContainer(t, componentsDeployment(t, filepath.Join(capiDir, "core", "config", "manager", "manager.yaml"))).Args, "InPlaceUpdates")
	components := filepath.Join(release, "control-plane-components.yaml")
	if got := featureGate(t, managerContainer(t, componentsDeployment(t, components)).Args, "InPlaceUpdates"); got != want {
		t.Errorf("the control-plane manager's InPlaceUpdates gate is %q, CAPI core's %q", got, want)
	}
	raw, err := os.ReadFile(components)
	if err != nil {
		t.Fatal(err)
	}
	cp := providers[1]
	for value, enabled := range map[string]bool{"": false, "false": false, "true": true} {
		processed, err := yamlprocessor.NewSimpleProcessor().Process(raw, func(name string) (string, error) {
			if name == "EXP_IN_PLACE_UPDATES" && value != "" {
				return value, nil
			}
			return "", errors.New("not set")
		})
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "components.yaml")
		writeFile(t, file, processed)
		opts, _ := parseArgs(t, cp, managerContainer(t, componentsDeployment(t, file)).Args)
		if got := opts.FeatureGates.Enabled(controlplane.InPlaceUpdatesGate); got != enabled {
			t.Errorf("EXP_IN_PLACE_UPDATES=%q: the control-plane manager's gate is %v, want %v", value, got, enabled)
		}
	}
}

// featureGate is the value args give a gate in --feature-gates, as written ("" when
// not given).
func featureGate(t *testing.T, args []string, gate string) string {
	t.Helper()
	for _, a := range args {
		gates, ok := strings.CutPrefix(a, "--feature-gates=")
		if !ok {
			continue
		}
		for g := range strings.SplitSeq(gates, ",") {
			if v, ok := strings.CutPrefix(g, gate+"="); ok {
				return v
			}
		}
	}
	return ""
}
