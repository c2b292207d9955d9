package controlplane

import (
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/machinenaming"
)

// validateMachineNaming refuses a template that could give two servers the same
// name, does not render, or renders names the apiserver would refuse: the control
// plane would find out only when creating a server, in the middle of a scale-up or
// rollout.
func validateMachineNaming(naming controlplanev1.MachineNamingSpec, fldPath *field.Path) field.ErrorList {
	if naming.Template == "" {
		return nil
	}
	if err := machinenaming.Check(naming.Template); err != nil {
		return field.ErrorList{field.Invalid(fldPath.Child("template"), naming.Template, err.Error())}
	}
	return nil
}

// validateTaints refuses the taints that belong to others, as Cluster API's own
// webhooks do for a Machine's taints: Cluster API's Machine controller would fight
// over them with the component that owns them. The schema already checks each
// taint's key, value, effect and propagation and that a key and effect appear once.
//
// Cluster API's webhooks also refuse any taint unless its MachineTaintPropagation
// feature gate is on. That gate is a setting of the Cluster API controller, which this
// webhook cannot see: with the gate off, creating a server fails with Cluster API's
// message, and the docs say to turn the gate on.
func validateTaints(taints []clusterv1.MachineTaint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range taints {
		keyPath := fldPath.Index(i).Child("key")
		if why := reservedTaintKey(t.Key); why != "" {
			errs = append(errs, field.Invalid(keyPath, t.Key, why))
		}
		for _, msg := range content.IsLabelKey(t.Key) {
			errs = append(errs, field.Invalid(keyPath, t.Key, msg))
		}
	}
	return errs
}

// reservedTaintKey says why a taint key is not for the machine template, or "".
func reservedTaintKey(key string) string {
	switch {
	case key == clusterv1.NodeUninitializedTaint.Key, key == clusterv1.NodeOutdatedRevisionTaint.Key:
		return "is set and removed by Cluster API itself"
	case strings.HasPrefix(key, "node.kubernetes.io/") && key != "node.kubernetes.io/out-of-service":
		return "is reserved for the kubelet and the node lifecycle controller (only node.kubernetes.io/out-of-service may be set)"
	case strings.HasPrefix(key, "node.cloudprovider.kubernetes.io/"):
		return "is reserved for the cloud controller manager"
	case key == "node-role.kubernetes.io/master":
		return "is deprecated since Kubernetes 1.24; use node-role.kubernetes.io/control-plane"
	}
	return ""
}

// taintsGateWarning reminds, when taints are set or changed, of the Cluster API
// feature gate they need: without it Cluster API refuses the servers' Machines, and
// this webhook cannot tell (see validateTaints). oldTaints is nil on creation.
func taintsGateWarning(oldTaints, newTaints []clusterv1.MachineTaint, fldPath *field.Path) admission.Warnings {
	if len(newTaints) == 0 || apiequality.Semantic.DeepEqual(oldTaints, newTaints) {
		return nil
	}
	return admission.Warnings{fldPath.String() + " needs Cluster API's MachineTaintPropagation feature gate: without it Cluster API " +
		"refuses Machines with taints, and no server can be created or updated"}
}
