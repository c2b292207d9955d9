package controlplane

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// unsupportedOptions says why no server may be created from the control plane's spec:
// its extraConfig holds an option capk3s cannot honour (k3s.UnsupportedOptions),
// stored before the webhook refused it or with the webhook off. The KThreesConfig
// webhook would refuse each new server's config, and a server rendered anyway would
// run where capk3s does not reach it; so the control plane says why on ScalingUp
// instead. "" when nothing stands in the way.
func unsupportedOptions(kcp *controlplanev1.KThreesControlPlane) string {
	spec := &kcp.Spec.KThreesConfigSpec
	var problems []string
	for _, l := range []struct {
		path    string
		options map[string]apiextensionsv1.JSON
	}{
		{"spec.kthreesConfigSpec.serverConfig.extraConfig", spec.ServerConfig.ExtraConfig},
		{"spec.kthreesConfigSpec.agentConfig.extraConfig", spec.AgentConfig.ExtraConfig},
	} {
		for _, key := range slices.Sorted(maps.Keys(l.options)) {
			if why, ok := k3s.UnsupportedOptions[k3s.OptionName(key)]; ok {
				problems = append(problems, fmt.Sprintf("%s[%s]: %s", l.path, key, why))
			}
		}
	}
	if len(problems) == 0 {
		return ""
	}
	return "no server is created until this is removed: " + strings.Join(problems, "; ")
}
