package cloudinit

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

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
// Options are checked against the k3s minor the machine installs (in.Version; the
// nearest supported minor outside v1.34-v1.36): a key that minor's k3s does not take
// for the role, or a value its flag cannot read, is an error naming every such key,
// since k3s would refuse to start long after the machine was created. This is what
// keeps a version bump from producing a config the new minor refuses: the webhooks
// cannot see the Machine's version.
func addExtraOptions(o k3sOptions, in Input) error {
	minors, _, err := k3s.OptionMinors(in.Version)
	if err != nil {
		return err
	}
	typed := make(map[string]bool, len(o))
	for key := range o {
		typed[key] = true
	}
	layers := []extraLayer{{k3s.RoleAgent, "spec.agentConfig.extraConfig", in.Spec.AgentConfig.ExtraConfig}}
	if in.Role != Agent {
		layers = append(layers, extraLayer{k3s.RoleServer, "spec.serverConfig.extraConfig", in.Spec.ServerConfig.ExtraConfig})
	}
	var unknown, bad []string
	for _, l := range layers {
		// Sorted, so that the error is the same on every render.
		for _, key := range slices.Sorted(maps.Keys(l.options)) {
			name := k3s.OptionName(key)
			if full := k3s.AliasOf(key); full != "" {
				// Managed options are known by their full names; "s" would override server.
				unknown = append(unknown, fmt.Sprintf("%s[%s] is k3s's short form of %s; write %s", l.path, key, full, full))
				continue
			}
			if why, ok := k3s.UnsupportedOptions[name]; ok {
				// Stored before the webhook refused it: an error on the config, never a
				// silently dropped or silently written option.
				unknown = append(unknown, fmt.Sprintf("%s[%s]: %s", l.path, key, why))
				continue
			}
			if _, managed := k3s.ManagedOptions[name]; managed || typed[name] {
				continue
			}
			if !k3s.KnownOption(minors, l.role, key) {
				unknown = append(unknown, fmt.Sprintf("%s[%s] is not a k3s %s option in %s", l.path, key, l.role, versionName(in.Version)))
				continue
			}
			v, err := k3s.OptionValue(l.options[key].Raw)
			if err == nil {
				err = k3s.CheckOptionType(minors, l.role, key, v)
			}
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s[%s]: %v", l.path, key, err))
				continue
			}
			o[key] = v
		}
	}
	problems := append(unknown, bad...)
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// versionName is the k3s release a message speaks of.
func versionName(version string) string {
	if version != "" {
		return "k3s " + k3s.NormalizeVersion(version)
	}
	return "every supported k3s minor (" + k3s.SupportedRange() + ")"
}
