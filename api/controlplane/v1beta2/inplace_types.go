package v1beta2

// InPlaceUpdatePolicy says whether outdated servers may be updated in place, through
// Cluster API's in-place update protocol, instead of being replaced.
// +kubebuilder:validation:Enum=IfPossible;Never
type InPlaceUpdatePolicy string

const (
	// InPlaceUpdateIfPossible (the default) updates a server in place when the
	// control-plane manager runs with the InPlaceUpdates feature gate and a registered
	// update extension covers every change; otherwise the server is replaced.
	InPlaceUpdateIfPossible InPlaceUpdatePolicy = "IfPossible"
	// InPlaceUpdateNever always replaces outdated servers, as without the gate: for
	// control planes whose machines must be rebuilt on every change.
	InPlaceUpdateNever InPlaceUpdatePolicy = "Never"
)

// Condition reasons for in-place updates, on the RollingOut condition.
const (
	// InPlaceUpdatingReason: RollingOut is True while a server is updated in place.
	InPlaceUpdatingReason = "InPlaceUpdating"
	// InPlaceUpdateNotStartedReason: RollingOut is True, and a server marked for an
	// in-place update shows no sign that Cluster API's Machine controller has started
	// updating it (its InPlaceUpdates feature gate may be off). The message names the
	// server; the control plane scales and remediates meanwhile, and its rollout waits.
	InPlaceUpdateNotStartedReason = "InPlaceUpdateNotStarted"
)
