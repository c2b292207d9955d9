package controlplane

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/k3s"
)

// criticalFields are the typed serverConfig fields that set a critical k3s option;
// every other critical option can only come from serverConfig.extraConfig. The
// network settings are left to validateImmutable, which refuses them on every
// control plane, with its own reason.
var criticalFields = map[string]string{
	"disable servicelb":        "disableComponents",
	"disable-cloud-controller": "disableCloudController",
	"cluster-cidr":             "",
	"service-cidr":             "",
	"cluster-dns":              "",
	"cluster-domain":           "",
}

// validateCriticalChange refuses a change of a setting k3s requires every server of
// an embedded-etcd cluster to share (k3s.CriticalChanges): a new server with the new
// value is refused by k3s when it joins, so a rollout would remove old servers (and
// their etcd members) and never replace them. It compares the k3s options the
// renderer writes for each spec, so defaults, typed fields and extraConfig count as
// they would on a machine. A control plane on an external datastore is not compared
// by k3s, and may change them. A spec that does not render is left to validateSpec.
func validateCriticalChange(oldSpec, newSpec *controlplanev1.KThreesControlPlaneSpec, fldPath *field.Path) field.ErrorList {
	if newSpec.KThreesConfigSpec.ServerConfig.Datastore != nil {
		return nil
	}
	before, err := cloudinit.ServerOptions(oldSpec.KThreesConfigSpec)
	if err != nil {
		return nil
	}
	after, err := cloudinit.ServerOptions(newSpec.KThreesConfigSpec)
	if err != nil {
		return nil
	}
	scPath := fldPath.Child("kthreesConfigSpec", "serverConfig")
	var errs field.ErrorList
	for _, c := range k3s.CriticalChanges(before, after) {
		fieldName, typed := criticalFields[c.Option]
		if typed && fieldName == "" {
			continue
		}
		path := scPath.Child(fieldName)
		if !typed {
			path = scPath.Child("extraConfig").Key(extraConfigKey(c.Option, &oldSpec.KThreesConfigSpec.ServerConfig, &newSpec.KThreesConfigSpec.ServerConfig))
		}
		errs = append(errs, field.Forbidden(path, fmt.Sprintf(
			"cannot change on a running embedded-etcd control plane (k3s %s: was %s, now %s): k3s refuses a joining server "+
				"whose setting differs from the running servers' (\"critical configuration value mismatch between servers\"), "+
				"so a rollout would remove servers and never replace them; keep the old value, or create a new cluster with the new one",
			c.Option, c.Old, c.New)))
	}
	return errs
}

// extraConfigKey is the extraConfig key that sets option, in the new spec or else
// the old one: the option itself or its "+" form.
func extraConfigKey(option string, specs ...*bootstrapv1.KThreesServerConfig) string {
	for i := len(specs) - 1; i >= 0; i-- {
		for _, key := range []string{option, option + "+"} {
			if _, ok := specs[i].ExtraConfig[key]; ok {
				return key
			}
		}
	}
	return option
}
