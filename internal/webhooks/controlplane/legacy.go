package controlplane

import (
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// MoveDeprecatedMachineTemplate moves cluster-api-k3s's machineTemplate fields to
// machineTemplate.spec, as the defaulting webhook does on every write. The control
// plane controller calls it too: a control plane that cluster-api-k3s stored never
// went through this webhook, and would otherwise have no infrastructure reference
// until someone wrote it again. namespace is the control plane's own.
func MoveDeprecatedMachineTemplate(mt *controlplanev1.KThreesControlPlaneMachineTemplate, namespace string) {
	convertDeprecatedMachineTemplate(mt, namespace)
}
