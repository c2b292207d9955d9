package bootstrap

import (
	"fmt"
	"maps"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// validateExtraConfig checks both extraConfig maps against internal/k3s's one list
// of k3s options, the list the renderer and the simulator use too. The agent map is
// written on servers as well, so it may only hold options both roles take.
func validateExtraConfig(spec *bootstrapv1.KThreesConfigSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateExtraOptions(spec.ServerConfig.ExtraConfig, k3s.RoleServer, fldPath.Child("serverConfig", "extraConfig"))...)
	errs = append(errs, validateExtraOptions(spec.AgentConfig.ExtraConfig, k3s.RoleAgent, fldPath.Child("agentConfig", "extraConfig"))...)
	return errs
}

func validateExtraOptions(options map[string]apiextensionsv1.JSON, role string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	// Sorted, so that the errors come in the same order on every call.
	for _, key := range slices.Sorted(maps.Keys(options)) {
		p := fldPath.Key(key)
		name := k3s.OptionName(key)
		if instead, ok := k3s.ManagedOptions[name]; ok {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("capk3s sets k3s's %s itself; use %s instead", name, instead)))
			continue
		}
		if !k3s.KnownOption(role, key) {
			detail := fmt.Sprintf("not a k3s %s option", role)
			if role == k3s.RoleAgent && k3s.ServerOnlyOption(key) {
				detail += "; server-only options go in serverConfig.extraConfig"
			}
			errs = append(errs, field.Invalid(p, key, detail))
			continue
		}
		// The value is left out of the message: options such as vpn-auth or
		// etcd-s3-secret-key hold secrets.
		if _, err := k3s.OptionValue(options[key].Raw); err != nil {
			errs = append(errs, field.Invalid(p, field.OmitValueType{}, err.Error()))
		}
	}
	return errs
}
