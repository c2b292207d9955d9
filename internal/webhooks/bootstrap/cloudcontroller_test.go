package bootstrap

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

func TestCloudControllerWarnings(t *testing.T) {
	t.Parallel()
	on := func(kubeletArgs ...string) *bootstrapv1.KThreesConfigSpec {
		s := &bootstrapv1.KThreesConfigSpec{}
		s.ServerConfig.DisableCloudController = ptr.To(false)
		s.AgentConfig.KubeletArgs = kubeletArgs
		return s
	}
	off := &bootstrapv1.KThreesConfigSpec{}
	off.ServerConfig.DisableCloudController = ptr.To(true)
	const want = "spec.serverConfig.disableCloudController is false: k3s's embedded cloud controller gives Nodes providerID k3s://<node-name>; " +
		"a Machine finds its Node only if the infrastructure reports that ID (or kubeletArgs set provider-id)"
	for _, tc := range []struct {
		name string
		spec *bootstrapv1.KThreesConfigSpec
		want []string
	}{
		{"default: embedded controller off", &bootstrapv1.KThreesConfigSpec{}, nil},
		{"explicitly off", off, nil},
		{"on", on("max-pods=200"), []string{want}},
		{"on, with the kubelet's provider-id", on("--provider-id=aws:///eu-west-1a/i-0abc"), nil},
	} {
		got := IgnoredFieldWarnings(tc.spec, field.NewPath("spec"))
		if len(got) != len(tc.want) || (len(got) == 1 && got[0] != tc.want[0]) {
			t.Errorf("%s: warnings %q, want %q", tc.name, got, tc.want)
		}
		for _, w := range got {
			// The apiserver may cut a warning after 256 characters.
			if len(w) > 256 {
				t.Errorf("%s: warning is %d characters long", tc.name, len(w))
			}
		}
	}
}
