package sim

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// serverDataWith renders a server's data for spec, as internal/bootstrap would.
func serverDataWith(t testing.TB, role cloudinit.Role, ca clusterCAs, j joinTokens, spec bootstrapv1.KThreesConfigSpec) *bootData {
	t.Helper()
	in := cloudinit.Input{
		Role: role, Version: testVersion, Token: j.server, AgentToken: j.agent, Spec: spec,
		Certificates: ca.files, TLSSANs: []string{"cp.example.com"},
	}
	if role == cloudinit.ServerJoin {
		in.ServerURL = testEndpoint
	}
	b, _ := parseRendered(t, mustRender(t, in))
	return b
}

func extra(kv ...string) map[string]apiextensionsv1.JSON {
	m := map[string]apiextensionsv1.JSON{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = apiextensionsv1.JSON{Raw: []byte(kv[i+1])}
	}
	return m
}

// TestCheckJoinCriticalSettings: k3s refuses a joining embedded-etcd server whose
// critical settings differ from the cluster's, and only those.
func TestCheckJoinCriticalSettings(t *testing.T) {
	t.Parallel()
	ca := mustCAs(t, theCAs)
	j := mustJoinTokens(t, token.Token{Server: "s3rver", Agent: "ag3nt"}, ca.serverCA)
	var first bootstrapv1.KThreesConfigSpec
	first.ServerConfig.DisableComponents = []string{"traefik"}
	init := serverDataWith(t, cloudinit.ServerInit, ca, j, first)
	s, err := init.initSecrets()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		edit    func(sc *bootstrapv1.KThreesServerConfig)
		wantErr string
	}{
		{name: "same settings", edit: func(*bootstrapv1.KThreesServerConfig) {}},
		{name: "another non-critical component disabled", edit: func(sc *bootstrapv1.KThreesServerConfig) {
			sc.DisableComponents = []string{"traefik", "metrics-server"}
		}},
		{name: "k3s's default flannel backend spelled out", edit: func(sc *bootstrapv1.KThreesServerConfig) {
			sc.ExtraConfig = extra("flannel-backend", `"vxlan"`, "egress-selector-mode", `"agent"`)
		}},
		{name: "servicelb disabled", wantErr: "disable-service-lb", edit: func(sc *bootstrapv1.KThreesServerConfig) {
			sc.DisableComponents = []string{"traefik", "servicelb"}
		}},
		{name: "cloud controller enabled", wantErr: "disable-cloud-controller", edit: func(sc *bootstrapv1.KThreesServerConfig) {
			sc.DisableCloudController = new(bool)
		}},
		{name: "flannel backend", wantErr: "flannel-backend", edit: func(sc *bootstrapv1.KThreesServerConfig) {
			sc.ExtraConfig = extra("flannel-backend", `"host-gw"`)
		}},
		{name: "secrets encryption", wantErr: "secrets-encryption", edit: func(sc *bootstrapv1.KThreesServerConfig) {
			sc.ExtraConfig = extra("secrets-encryption", `true`)
		}},
		{name: "helm controller and embedded registry", wantErr: "disable-helm-controller, embedded-registry", edit: func(sc *bootstrapv1.KThreesServerConfig) {
			sc.ExtraConfig = extra("disable-helm-controller", `true`, "embedded-registry", `true`)
		}},
	}
	for _, tc := range tests {
		spec := *first.DeepCopy()
		tc.edit(&spec.ServerConfig)
		b := serverDataWith(t, cloudinit.ServerJoin, ca, j, spec)
		err := b.checkJoin(s, only(testEndpoint), nil)
		if tc.wantErr == "" && err != nil {
			t.Errorf("%s: checkJoin: %v", tc.name, err)
		}
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), k3smodel.JoinRefusedMessage) ||
			!strings.Contains(err.Error(), "mismatched: "+tc.wantErr)) {
			t.Errorf("%s: checkJoin = %v, want k3s's refusal naming %s", tc.name, err, tc.wantErr)
		}
	}
}

// TestCheckJoinDatastoreIgnoresCriticalSettings: k3s compares no settings for a
// server of a datastore cluster; it bootstraps from the datastore.
func TestCheckJoinDatastoreIgnoresCriticalSettings(t *testing.T) {
	t.Parallel()
	ca := mustCAs(t, theCAs)
	j := mustJoinTokens(t, token.Token{Server: "s3rver", Agent: "ag3nt"}, ca.serverCA)
	first, _ := datastoreServerData(t, cloudinit.ServerInit, ca, j, cloudinit.Datastore{Endpoint: testDatastore})
	s, err := first.initSecrets()
	if err != nil {
		t.Fatal(err)
	}
	joining, _ := datastoreServerData(t, cloudinit.ServerJoin, ca, j, cloudinit.Datastore{Endpoint: testDatastore})
	joining.k3sConfig["flannel-backend"] = "host-gw"
	if err := joining.checkJoin(s, only(testEndpoint), nil); err != nil {
		t.Errorf("a datastore server with another flannel backend was refused: %v", err)
	}
}
