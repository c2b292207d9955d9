package cloudinit

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// ServerOptions holds what a joining server's config file holds for the spec, the
// defaults capk3s writes included, and nothing from Secrets.
func TestServerOptions(t *testing.T) {
	var spec bootstrapv1.KThreesConfigSpec
	spec.ServerConfig.DisableComponents = []string{"servicelb"}
	spec.ServerConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"flannel-backend": {Raw: []byte(`"host-gw"`)}}
	o, err := ServerOptions(spec)
	if err != nil {
		t.Fatal(err)
	}
	if o["disable-cloud-controller"] != true || o["flannel-backend"] != "host-gw" {
		t.Errorf("options %v lack capk3s's cloud-controller default or the extra option", o)
	}
	for _, key := range []string{"token", "server", "agent-token", "cluster-init"} {
		if _, ok := o[key]; ok {
			t.Errorf("options hold %s", key)
		}
	}
}
