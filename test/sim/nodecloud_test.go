package sim

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/token"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// renderRole renders a machine's data with the product's renderer.
func renderRole(t *testing.T, role cloudinit.Role, spec bootstrapv1.KThreesConfigSpec) *bootData {
	t.Helper()
	ca := mustCAs(t, theCAs)
	j := mustJoinTokens(t, token.Token{Server: "s3rver", Agent: "ag3nt"}, ca.serverCA)
	in := cloudinit.Input{Role: role, Version: testVersion, Token: j.server, AgentToken: j.agent, Spec: spec}
	switch role {
	case cloudinit.ServerInit:
		in.Certificates = ca.files
	case cloudinit.Agent:
		in.Token, in.AgentToken, in.ServerURL = j.agent, "", testEndpoint
	}
	b, _ := parseRendered(t, mustRender(t, in))
	return b
}

func TestNodeProviderIDOfRenderedData(t *testing.T) {
	t.Parallel()
	const host, infra = "machine-0", testProviderID
	embeddedOn := bootstrapv1.KThreesConfigSpec{ServerConfig: bootstrapv1.KThreesServerConfig{DisableCloudController: ptr.To(false)}}
	withProviderID := embeddedOn
	withProviderID.AgentConfig.KubeletArgs = []string{"provider-id=" + infra}
	noCloudProvider := bootstrapv1.KThreesConfigSpec{ServerConfig: bootstrapv1.KThreesServerConfig{CloudProviderName: ptr.To("")}}
	for _, tc := range []struct {
		name        string
		role        cloudinit.Role
		spec        bootstrapv1.KThreesConfigSpec
		embeddedCCM bool // the cluster's servers'
		want        string
	}{
		{"default server: the infrastructure's cloud controller sets the machine's ID", cloudinit.ServerInit, bootstrapv1.KThreesConfigSpec{}, false, infra},
		{"default agent", cloudinit.Agent, bootstrapv1.KThreesConfigSpec{}, false, infra},
		{"server with the embedded cloud controller: k3s://<node>", cloudinit.ServerInit, embeddedOn, true, "k3s://" + host},
		{"agent of such a cluster follows its servers", cloudinit.Agent, bootstrapv1.KThreesConfigSpec{}, true, "k3s://" + host},
		{"embedded cloud controller keeps the kubelet's provider-id", cloudinit.ServerInit, withProviderID, true, infra},
		{"no cloud provider and no embedded controller: nobody sets one", cloudinit.ServerInit, noCloudProvider, false, ""},
	} {
		b := renderRole(t, tc.role, tc.spec)
		got, err := nodeProviderID(b, secrets{embeddedCCM: tc.embeddedCCM}, host, infra)
		if err != nil || got != tc.want {
			t.Errorf("%s: providerID = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestInstalledReleaseOfRenderedData(t *testing.T) {
	t.Parallel()
	airGapped := bootstrapv1.KThreesConfigSpec{AgentConfig: bootstrapv1.KThreesAgentConfig{AirGapped: true}}
	image := func(release string) *simv1.SimMachine {
		sm := &simv1.SimMachine{}
		if release != "" {
			sm.ObjectMeta = metav1.ObjectMeta{Annotations: map[string]string{simv1.ImageK3sReleaseAnnotation: release}}
		}
		return sm
	}
	for _, tc := range []struct {
		name    string
		spec    bootstrapv1.KThreesConfigSpec
		sm      *simv1.SimMachine
		want    string
		wantErr string
	}{
		{"download: what is asked", bootstrapv1.KThreesConfigSpec{}, image("v1.34.9+k3s1"), testVersion, ""},
		{"air-gapped: the image's binary", airGapped, image("v1.34.9+k3s1"), "v1.34.9+k3s1", ""},
		{"air-gapped image that carries what is asked", airGapped, image(""), testVersion, ""},
		{"air-gapped image with a bad release name", airGapped, image("latest"), "", "not a k3s release name"},
	} {
		b := renderRole(t, cloudinit.Agent, tc.spec)
		got, err := installedRelease(b, tc.sm)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: installed %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
