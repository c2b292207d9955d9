package bootstrap

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// validateExtraConfig checks both extraConfig maps, and agentConfig.nodeLabels, as the
// k3s of version would read them (see k3s.OptionMinors: every supported minor when the
// version is not known here, the nearest one outside v1.34-v1.36): a key k3s does not
// take for the role (the agent map is written on servers as well, so it may only hold
// options both roles take), a value its flag cannot read, and a node label the kubelet
// refuses would all stop k3s from starting. A version that is not one is reported by
// validateVersion; the options are then checked against every supported minor.
func validateExtraConfig(spec *bootstrapv1.KThreesConfigSpec, version string, fldPath *field.Path) field.ErrorList {
	minors, _, err := k3s.OptionMinors(version)
	if err != nil {
		minors = k3s.SupportedMinors()
	}
	var errs field.ErrorList
	serverPath := fldPath.Child("serverConfig", "extraConfig")
	errs = append(errs, validateExtraOptions(spec.ServerConfig.ExtraConfig, minors, k3s.RoleServer, serverPath)...)
	errs = append(errs, validateExtraOptions(spec.AgentConfig.ExtraConfig, minors, k3s.RoleAgent, fldPath.Child("agentConfig", "extraConfig"))...)
	errs = append(errs, validateNodeLabels(spec.AgentConfig.NodeLabels, fldPath.Child("agentConfig", "nodeLabels"))...)
	if spec.ServerConfig.Datastore != nil && disablesEtcd(spec.ServerConfig.ExtraConfig) {
		errs = append(errs, field.Invalid(serverPath.Key("disable-etcd"), true,
			"k3s refuses disable-etcd together with an external datastore (serverConfig.datastore)"))
	}
	return errs
}

func validateExtraOptions(options map[string]apiextensionsv1.JSON, minors []int, role string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	// Sorted, so that the errors come in the same order on every call.
	for _, key := range slices.Sorted(maps.Keys(options)) {
		p := fldPath.Key(key)
		name := k3s.OptionName(key)
		if full := k3s.AliasOf(key); full != "" {
			// Managed options are known by their full names; "s" would override server.
			errs = append(errs, field.Invalid(p, key, fmt.Sprintf("is k3s's short form of %s; write %s", full, full)))
			continue
		}
		if why, ok := k3s.UnsupportedOptions[name]; ok {
			errs = append(errs, field.Forbidden(p, why))
			continue
		}
		if instead, ok := k3s.ManagedOptions[name]; ok {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("capk3s sets k3s's %s itself; use %s instead", name, instead)))
			continue
		}
		if !k3s.KnownOption(minors, role, key) {
			detail := fmt.Sprintf("not a k3s %s option", role)
			if role == k3s.RoleAgent && k3s.ServerOnlyOption(key) {
				detail += "; server-only options go in serverConfig.extraConfig"
			}
			detail += fmt.Sprintf(" (k3s %s)", strings.Join(k3s.MissingIn(minors, role, key), ", "))
			if role == k3s.RoleAgent {
				detail += "; k3s agent exits on a config key it does not know"
			}
			errs = append(errs, field.Invalid(p, key, detail))
			continue
		}
		// The value is left out of the message: options such as vpn-auth or
		// etcd-s3-secret-key hold secrets.
		v, err := k3s.OptionValue(options[key].Raw)
		if err == nil {
			err = k3s.CheckOptionType(minors, role, key, v)
		}
		if err != nil {
			errs = append(errs, field.Invalid(p, field.OmitValueType{}, err.Error()))
		}
	}
	return errs
}

// validateNodeLabels refuses the labels the kubelet will not start with (k3s passes
// node-label to its --node-labels unchanged).
func validateNodeLabels(labels []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, l := range labels {
		if reserved := k3s.ReservedNodeLabels([]string{l}); len(reserved) > 0 {
			errs = append(errs, field.Invalid(fldPath.Index(i), l, fmt.Sprintf(
				"the kubelet refuses to start with %s: a kubelet may only set kubernetes.io/k8s.io labels under node.kubernetes.io, kubelet.kubernetes.io or its own well-known ones; use another domain (e.g. node.cluster.x-k8s.io via the Machine's labels)",
				strings.Join(reserved, ", "))))
		}
	}
	return errs
}

// disablesEtcd says whether an extraConfig map turns k3s's etcd off.
func disablesEtcd(options map[string]apiextensionsv1.JSON) bool {
	raw, ok := options["disable-etcd"]
	if !ok {
		return false
	}
	v, err := k3s.OptionValue(raw.Raw)
	if err != nil {
		return false
	}
	for _, s := range k3s.OptionTexts(v) {
		if b, err := strconv.ParseBool(s); err == nil && b {
			return true
		}
	}
	return false
}

// ValidateControlPlaneExtraConfig is the rule a control plane's kthreesConfigSpec
// adds: its first server starts the cluster (cluster-init, no server to join), and
// k3s refuses disable-etcd without a server to join (pkg/cli/server/server.go), so
// no server of a KThreesControlPlane may have it.
func ValidateControlPlaneExtraConfig(spec *bootstrapv1.KThreesConfigSpec, fldPath *field.Path) field.ErrorList {
	if disablesEtcd(spec.ServerConfig.ExtraConfig) && spec.ServerConfig.Datastore == nil {
		return field.ErrorList{field.Invalid(fldPath.Child("serverConfig", "extraConfig").Key("disable-etcd"), true,
			"k3s refuses disable-etcd on a server that joins no other (--server is required with --disable-etcd), and the control plane's first server joins none")}
	}
	return nil
}

// K3sVersionWarnings warns, when spec has extraConfig options, that version is outside
// the supported minors: the options are checked against the nearest supported minor's,
// which may not be what that k3s takes. Without options there is nothing to warn of.
func K3sVersionWarnings(spec *bootstrapv1.KThreesConfigSpec, version string, fldPath *field.Path) []string {
	if len(spec.ServerConfig.ExtraConfig) == 0 && len(spec.AgentConfig.ExtraConfig) == 0 {
		return nil
	}
	minors, outside, err := k3s.OptionMinors(version)
	if err != nil || !outside {
		return nil
	}
	return []string{fmt.Sprintf("%s: k3s %s is outside the k3s minors capk3s supports (%s); its config options are checked against v1.%d's",
		fldPath, version, k3s.SupportedRange(), minors[0])}
}
