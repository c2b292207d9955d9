package bootstrap

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// embeddedCCMWarning: with k3s's embedded cloud controller on, each Node gets
// providerID k3s://<node-name> unless the kubelet is given one, and Cluster API
// matches a Node to its Machine only by an equal providerID. Accepted, since an
// infrastructure provider may report exactly that ID, but never silently.
const embeddedCCMWarning = "is false: k3s's embedded cloud controller gives Nodes providerID k3s://<node-name>; " +
	"a Machine finds its Node only if the infrastructure reports that ID (or kubeletArgs set provider-id)"

// CloudControllerWarnings warns when the spec turns k3s's embedded cloud controller
// on without giving the kubelet a provider-id (docs/design.md, "providerID").
func CloudControllerWarnings(spec *bootstrapv1.KThreesConfigSpec, fldPath *field.Path) admission.Warnings {
	dcc := spec.ServerConfig.DisableCloudController
	if dcc == nil || *dcc {
		return nil
	}
	for _, a := range spec.AgentConfig.KubeletArgs {
		if strings.HasPrefix(strings.TrimPrefix(a, "--"), "provider-id=") {
			return nil
		}
	}
	return admission.Warnings{fldPath.Child("serverConfig", "disableCloudController").String() + " " + embeddedCCMWarning}
}
