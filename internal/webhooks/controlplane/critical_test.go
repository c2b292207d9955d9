package controlplane

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/webhooktest"
)

// TestCriticalSettingsOnEmbeddedEtcd: through the apiserver, a change of a setting k3s
// requires every server to share is refused on an embedded-etcd control plane (k3s
// would refuse every new server, so a rollout would only remove servers), whether it
// is a typed field or an extraConfig key; other changes go through, and so do critical
// ones on an external datastore, whose servers k3s does not compare.
func TestCriticalSettingsOnEmbeddedEtcd(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	embedded := newControlPlane(ns)
	embedded.Name = "embedded"
	embedded.Spec.KThreesConfigSpec.ServerConfig.DisableComponents = []string{"traefik"}
	embedded.Spec.KThreesConfigSpec.ServerConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"flannel-backend": {Raw: []byte(`"vxlan"`)}}
	if err := env.Client.Create(ctx, embedded); err != nil {
		t.Fatal(err)
	}
	update := func(name string, modify func(*controlplanev1.KThreesControlPlane)) error {
		t.Helper()
		cp := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cp); err != nil {
			t.Fatal(err)
		}
		modify(cp)
		return env.Client.Update(ctx, cp)
	}
	const why = "k3s refuses a joining server whose setting differs from the running servers'"
	for _, tc := range []struct {
		name, path, message string
		modify              func(*controlplanev1.KThreesControlPlane)
	}{
		{"servicelb disabled", "spec.kthreesConfigSpec.serverConfig.disableComponents", "(k3s disable servicelb: was false, now true)",
			func(cp *controlplanev1.KThreesControlPlane) {
				cp.Spec.KThreesConfigSpec.ServerConfig.DisableComponents = []string{"traefik", "servicelb"}
			}},
		{"cloud controller enabled", "spec.kthreesConfigSpec.serverConfig.disableCloudController", "(k3s disable-cloud-controller: was true, now false)",
			func(cp *controlplanev1.KThreesControlPlane) {
				cp.Spec.KThreesConfigSpec.ServerConfig.DisableCloudController = ptr.To(false)
			}},
		{"flannel backend", "spec.kthreesConfigSpec.serverConfig.extraConfig[flannel-backend]", "(k3s flannel-backend: was vxlan, now host-gw)",
			func(cp *controlplanev1.KThreesControlPlane) {
				cp.Spec.KThreesConfigSpec.ServerConfig.ExtraConfig["flannel-backend"] = apiextensionsv1.JSON{Raw: []byte(`"host-gw"`)}
			}},
		{"secrets encryption added", "spec.kthreesConfigSpec.serverConfig.extraConfig[secrets-encryption]", "was false, now true",
			func(cp *controlplanev1.KThreesControlPlane) {
				cp.Spec.KThreesConfigSpec.ServerConfig.ExtraConfig["secrets-encryption"] = apiextensionsv1.JSON{Raw: []byte(`true`)}
			}},
	} {
		err := update("embedded", tc.modify)
		webhooktest.CheckRejected(t, err, webhooktest.Rejection{Path: tc.path, Message: tc.message, Webhook: controlPlaneWebhook})
		webhooktest.CheckRejected(t, err, webhooktest.Rejection{Path: tc.path, Message: why, Webhook: controlPlaneWebhook})
	}

	// Not critical: other disabled components; k3s's default spelled out differently.
	if err := update("embedded", func(cp *controlplanev1.KThreesControlPlane) {
		cp.Spec.KThreesConfigSpec.ServerConfig.DisableComponents = []string{"traefik", "local-storage"}
		cp.Spec.KThreesConfigSpec.ServerConfig.DisableCloudController = ptr.To(true)
		delete(cp.Spec.KThreesConfigSpec.ServerConfig.ExtraConfig, "flannel-backend")
	}); err != nil {
		t.Errorf("a change k3s does not compare was refused: %v", err)
	}

	external := newControlPlane(ns)
	external.Name = "external"
	withDatastore(&external.Spec)
	if err := env.Client.Create(ctx, external); err != nil {
		t.Fatal(err)
	}
	if err := update("external", func(cp *controlplanev1.KThreesControlPlane) {
		cp.Spec.KThreesConfigSpec.ServerConfig.DisableComponents = []string{"servicelb"}
		cp.Spec.KThreesConfigSpec.ServerConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"flannel-backend": {Raw: []byte(`"host-gw"`)}}
	}); err != nil {
		t.Errorf("a critical change on an external datastore was refused: %v", err)
	}
}
