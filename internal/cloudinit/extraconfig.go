package cloudinit

import (
	"fmt"
	"maps"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/capk3s/capk3s/internal/k3s"
)

// extraLayer is one extraConfig map, checked against the options of role.
type extraLayer struct {
	role    string
	path    string
	options map[string]apiextensionsv1.JSON
}

// addExtraOptions merges the spec's extraConfig maps into o, after the typed fields:
// agentConfig.extraConfig on every machine, then on servers serverConfig.extraConfig
// over it. An option the typed fields wrote, or one capk3s manages, is skipped:
// typed fields always win, and capk3s's own options (token, cluster-init, ...) are
// what the control plane relies on. The webhooks refuse such keys already; skipping
// here keeps an object stored before them, or past them, from overriding capk3s.
// A key k3s does not take for the role, or a value it cannot read, is an error:
// k3s would refuse to start, long after the machine was created.
func addExtraOptions(o k3sOptions, in Input) error {
	typed := make(map[string]bool, len(o))
	for key := range o {
		typed[key] = true
	}
	layers := []extraLayer{{k3s.RoleAgent, "spec.agentConfig.extraConfig", in.Spec.AgentConfig.ExtraConfig}}
	if in.Role != Agent {
		layers = append(layers, extraLayer{k3s.RoleServer, "spec.serverConfig.extraConfig", in.Spec.ServerConfig.ExtraConfig})
	}
	for _, l := range layers {
		// Sorted, so that the first error is the same on every render.
		for _, key := range slices.Sorted(maps.Keys(l.options)) {
			name := k3s.OptionName(key)
			if _, managed := k3s.ManagedOptions[name]; managed || typed[name] {
				continue
			}
			if !k3s.KnownOption(l.role, key) {
				return fmt.Errorf("%s[%s] is not a k3s %s option", l.path, key, l.role)
			}
			v, err := k3s.OptionValue(l.options[key].Raw)
			if err != nil {
				return fmt.Errorf("%s[%s]: %w", l.path, key, err)
			}
			o[key] = v
		}
	}
	return nil
}
