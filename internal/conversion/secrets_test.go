package conversion

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1" //nolint:staticcheck // the v1beta1 contract types of the v1beta1 API served for cluster-api-k3s users
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// secrets are the strings the sample objects hide in the fields that may carry
// credentials; none may ever show in an annotation.
var secrets = []string{"hunter2", "K10pre-token", "post-token", "boot-secret", "tskey-auth-SECRET", "proxy-pass", "#cloud-config"}

// secretConfigSpecV1Beta1 is a v1beta1 config spec with credentials where users put
// them: inline file content and commands.
func secretConfigSpecV1Beta1() bootstrapv1beta1.KThreesConfigSpec {
	return bootstrapv1beta1.KThreesConfigSpec{
		Files: []bootstrapv1beta1.File{
			{Path: "/etc/app/db.env", Content: "password=hunter2", Permissions: "0600"},
			{Path: "/etc/app/ca.pem", ContentFrom: &bootstrapv1beta1.FileSource{Secret: bootstrapv1beta1.SecretFileSource{Name: "ca", Key: "tls.crt"}}},
		},
		PreK3sCommands:  []string{"echo K10pre-token > /tmp/t"},
		PostK3sCommands: []string{"curl -H 'Authorization: post-token' https://example.test"},
		ServerConfig:    bootstrapv1beta1.KThreesServerConfig{ClusterDomain: "cluster.local", DisableExternalCloudProvider: true},
		AgentConfig:     bootstrapv1beta1.KThreesAgentConfig{NodeName: "n", AirGapped: true},
		Version:         "v1.31.4+k3s1",
	}
}

// secretConfigSpecV1Beta2 is secretConfigSpecV1Beta1 at v1beta2, with the
// v1beta2-only fields set too, those that may carry credentials (extraConfig, boot
// commands, additional user data) and those that may not (users with a password from a Secret, format).
func secretConfigSpecV1Beta2() bootstrapv1.KThreesConfigSpec {
	s := bootstrapv1.KThreesConfigSpec{}
	v1 := secretConfigSpecV1Beta1()
	configSpecToHub(&v1, &s)
	s.Format = bootstrapv1.Ignition
	s.BootCommands = []string{"echo boot-secret"}
	s.Users = []bootstrapv1.User{{Name: "ops", PasswdFrom: &bootstrapv1.PasswdSource{Secret: bootstrapv1.SecretKeyReference{Name: "ops-password", Key: "hash"}}}}
	s.AgentConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"vpn-auth": {Raw: []byte(`"name=tailscale,joinKey=tskey-auth-SECRET"`)}}
	s.ServerConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"etcd-s3-proxy": {Raw: []byte(`"http://user:proxy-pass@proxy.example.test"`)}}
	s.Files = append(s.Files, bootstrapv1.File{Path: "/etc/app/settings.ini",
		ContentFrom: &bootstrapv1.FileSource{ConfigMap: bootstrapv1.ConfigMapFileSource{Name: "app", Key: "settings.ini"}}})
	s.AdditionalUserData = bootstrapv1.AdditionalUserData{CloudConfig: "apt:\n  http_proxy: http://user:hunter2@proxy.example.test\n"}
	return s
}

func oldTemplateControlPlane(apiVersion string, drain time.Duration) *controlplanev1beta1.KThreesControlPlane {
	return &controlplanev1beta1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: "ns", UID: "cp-uid"},
		Spec: controlplanev1beta1.KThreesControlPlaneSpec{
			Replicas: ptr.To[int32](3), Version: "v1.31.4+k3s1",
			InfrastructureTemplate: corev1.ObjectReference{APIVersion: apiVersion, Kind: "DockerMachineTemplate", Name: "cp"},
			KThreesConfigSpec:      secretConfigSpecV1Beta1(),
			NodeDrainTimeout:       &metav1.Duration{Duration: drain},
			MachineTemplate:        controlplanev1beta1.KThreesControlPlaneMachineTemplate{ObjectMeta: clusterv1beta1.ObjectMeta{Labels: map[string]string{"a": "b"}}},
		},
		Status: controlplanev1beta1.KThreesControlPlaneStatus{Ready: true, Replicas: 3,
			Conditions: clusterv1beta1.Conditions{{Type: "Ready", Status: corev1.ConditionTrue}}},
	}
}

// noSecretIn fails the test when an annotation of obj holds one of the secrets.
func noSecretIn(t *testing.T, sample, step string, obj metav1.Object) {
	t.Helper()
	for key, value := range obj.GetAnnotations() {
		for _, s := range secrets {
			if strings.Contains(value, s) {
				t.Errorf("%s, %s: annotation %s holds %q:\n%s", sample, step, key, s, value)
			}
		}
	}
}

// sameAsStored fails the test unless got equals want once both are stored (JSON),
// conversion annotations aside.
func sameAsStored[T metav1.Object](t *testing.T, sample string, want, got T) {
	t.Helper()
	for _, o := range []T{want, got} {
		a := o.GetAnnotations()
		delete(a, v1beta1DataAnnotation)
		delete(a, hubDataAnnotation)
		if len(a) == 0 {
			o.SetAnnotations(nil)
		}
		asStored(t, o)
	}
	if !apiequality.Semantic.DeepEqual(want, got) {
		t.Errorf("%s: not the same after the round trip (-want +got):\n%s", sample, cmp.Diff(want, got))
	}
}

// Every shape of object, converted up and down, leaves no credential in an
// annotation: metadata is read by more parties than the spec, and a copy there would
// outlive its removal from the spec. Each still comes back whole.
func TestNoSecretInConversionAnnotations(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	stored := useStoredObjects(&lk)
	ctx := t.Context()

	controlPlanes := map[string]*controlplanev1beta1.KThreesControlPlane{
		"old template apiVersion":    oldTemplateControlPlane("infrastructure.cluster.x-k8s.io/v1beta1", time.Minute),
		"newest template apiVersion": oldTemplateControlPlane("infrastructure.cluster.x-k8s.io/v1beta2", time.Minute),
		"sub-second drain timeout":   oldTemplateControlPlane("infrastructure.cluster.x-k8s.io/v1beta2", 1500*time.Millisecond),
		"template in a namespace": func() *controlplanev1beta1.KThreesControlPlane {
			cp := oldTemplateControlPlane("infrastructure.cluster.x-k8s.io/v1alpha4", time.Minute)
			cp.Spec.InfrastructureTemplate.Namespace, cp.Spec.InfrastructureTemplate.UID = "ns", "tmpl-uid"
			return cp
		}(),
	}
	for name, v1 := range controlPlanes {
		hub := &controlplanev1.KThreesControlPlane{}
		if err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(ctx, v1.DeepCopy(), hub); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		noSecretIn(t, name, "up", hub)
		back := &controlplanev1beta1.KThreesControlPlane{}
		if err := lk.ConvertKThreesControlPlaneHubToV1Beta1(ctx, hub.DeepCopy(), back); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		noSecretIn(t, name, "up and down", back)
		sameAsStored(t, name, v1, back)
	}

	hubCP := &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: "ns", UID: "cp-uid"},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Version: "v1.31.4+k3s1", KThreesConfigSpec: secretConfigSpecV1Beta2(),
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Name: "cp"},
			}},
			MachineNaming: controlplanev1.MachineNamingSpec{Template: "{{ .cluster.name }}-{{ .random }}"},
		},
	}
	v1CP := &controlplanev1beta1.KThreesControlPlane{}
	if err := storing(stored, lk.ConvertKThreesControlPlaneHubToV1Beta1)(ctx, hubCP.DeepCopy(), v1CP); err != nil {
		t.Fatal(err)
	}
	noSecretIn(t, "v1beta2 control plane", "down", v1CP)
	upCP := &controlplanev1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(ctx, v1CP, upCP); err != nil {
		t.Fatal(err)
	}
	noSecretIn(t, "v1beta2 control plane", "down and up", upCP)
	sameAsStored(t, "v1beta2 control plane", hubCP, upCP)

	v1Config := &bootstrapv1beta1.KThreesConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "c-uid"},
		Spec:       secretConfigSpecV1Beta1(),
		Status: bootstrapv1beta1.KThreesConfigStatus{Ready: true, BootstrapData: []byte("#cloud-config\ntoken: x"), FailureReason: "old",
			Conditions: clusterv1beta1.Conditions{{Type: "Ready", Status: corev1.ConditionTrue}}},
	}
	hubConfig := &bootstrapv1.KThreesConfig{}
	if err := lk.ConvertKThreesConfigV1Beta1ToHub(ctx, v1Config.DeepCopy(), hubConfig); err != nil {
		t.Fatal(err)
	}
	noSecretIn(t, "v1beta1 config", "up", hubConfig)
	backConfig := &bootstrapv1beta1.KThreesConfig{}
	if err := lk.ConvertKThreesConfigHubToV1Beta1(ctx, hubConfig.DeepCopy(), backConfig); err != nil {
		t.Fatal(err)
	}
	noSecretIn(t, "v1beta1 config", "up and down", backConfig)
	v1Config.Status.BootstrapData = nil // dropped on purpose
	sameAsStored(t, "v1beta1 config", v1Config, backConfig)

	hubConfig.Spec = secretConfigSpecV1Beta2()
	downConfig := &bootstrapv1beta1.KThreesConfig{}
	if err := storing(stored, lk.ConvertKThreesConfigHubToV1Beta1)(ctx, hubConfig.DeepCopy(), downConfig); err != nil {
		t.Fatal(err)
	}
	noSecretIn(t, "v1beta2 config", "down", downConfig)
	upConfig := &bootstrapv1.KThreesConfig{}
	if err := lk.ConvertKThreesConfigV1Beta1ToHub(ctx, downConfig, upConfig); err != nil {
		t.Fatal(err)
	}
	noSecretIn(t, "v1beta2 config", "down and up", upConfig)
	sameAsStored(t, "v1beta2 config", hubConfig, upConfig)

	v1Template := &bootstrapv1beta1.KThreesConfigTemplate{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns", UID: "t-uid"},
		Spec: bootstrapv1beta1.KThreesConfigTemplateSpec{Template: bootstrapv1beta1.KThreesConfigTemplateResource{Spec: secretConfigSpecV1Beta1()}}}
	hubTemplate := &bootstrapv1.KThreesConfigTemplate{}
	if err := lk.ConvertKThreesConfigTemplateV1Beta1ToHub(ctx, v1Template, hubTemplate); err != nil {
		t.Fatal(err)
	}
	noSecretIn(t, "v1beta1 config template", "up", hubTemplate)
	hubTemplate.Spec.Template.Spec = secretConfigSpecV1Beta2()
	hubTemplate.Spec.Template.ObjectMeta.Labels = map[string]string{"role": "worker"}
	downTemplate := &bootstrapv1beta1.KThreesConfigTemplate{}
	if err := storing(stored, lk.ConvertKThreesConfigTemplateHubToV1Beta1)(ctx, hubTemplate.DeepCopy(), downTemplate); err != nil {
		t.Fatal(err)
	}
	noSecretIn(t, "v1beta2 config template", "down", downTemplate)
	upTemplate := &bootstrapv1.KThreesConfigTemplate{}
	if err := lk.ConvertKThreesConfigTemplateV1Beta1ToHub(ctx, downTemplate, upTemplate); err != nil {
		t.Fatal(err)
	}
	noSecretIn(t, "v1beta2 config template", "down and up", upTemplate)
	sameAsStored(t, "v1beta2 config template", hubTemplate, upTemplate)
}
