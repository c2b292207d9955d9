package inplaceplan

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/cluster-api/util/conditions"

	"github.com/capk3s/capk3s/internal/runtimehooks"
)

// What an in-place update under way holds back, and for how long. The order of a
// pass is KCP's: an incomplete trigger is completed first; remediation comes next (a
// server broken during its update is replaced like any other); then the pass waits
// for the updates under way, taking no scaling or rollout step, since CAPI's Machine
// controller reports progress on the Machine and its events bring the next pass.
//
// One exception keeps a Machine that CAPI never updates from holding the control
// plane for ever (CAPI core's InPlaceUpdates gate off while capk3s's is on: CAPI then
// leaves the marks alone): an update CAPI has shown no sign of starting for
// StartTimeout is reported on RollingOut and holds only the rollout. Scaling goes on
// around it, and a scale-down never picks it; no second update starts, and the server
// is never removed for it. Deleting the Machine replaces it.

// StartTimeout is how long CAPI's Machine controller may show a marked server without
// any sign of working on its update before the control plane reports it. It starts
// calling UpdateMachine within seconds of the pending hook.
const StartTimeout = 5 * time.Minute

// capiUpdatingMessage is the Updating message CAPI's Machine controller (v1.14) gives
// a marked Machine when it has nothing more to say: before it has called UpdateMachine,
// and always while its InPlaceUpdates gate is off. Once it has called the hook it adds
// the extension's message ("In-place update in progress: ...", which capk3s's
// extension always gives) or reports a failure (reason InPlaceUpdateFailed).
const capiUpdatingMessage = "In-place update in progress"

// NotStartedSince says since when CAPI's Machine controller has shown m, marked
// completely, as updating in place without any sign of working on the update. ok is
// false once it has shown one, and while it has not shown m as updating at all (there
// is no time to count from; its next status write wakes the control plane).
func NotStartedSince(m *clusterv1.Machine) (since time.Time, ok bool) {
	if _, marked := m.Annotations[clusterv1.UpdateInProgressAnnotation]; !marked || !runtimehooks.IsPending(runtimehooksv1.UpdateMachine, m) {
		return time.Time{}, false
	}
	c := conditions.Get(m, clusterv1.MachineUpdatingCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != clusterv1.MachineInPlaceUpdatingReason ||
		strings.TrimSpace(c.Message) != capiUpdatingMessage {
		return time.Time{}, false
	}
	return c.LastTransitionTime.Time, true
}

// NotStarted is an update CAPI has not started within StartTimeout: the Machine, and
// since when it has been shown as updating.
type NotStarted struct {
	Machine string
	Since   time.Time
}

// Hold says whether the in-place updates under way (updating, the Machines marked for
// one) hold the pass's scaling and rollout. Every update CAPI works on holds them,
// however long it takes; so does one CAPI may still start, until StartTimeout has
// passed (wait is what is left of it: no watch reports time passing). The updates CAPI
// has not started by then are returned in notStarted, in updating's order; they hold
// only the rollout.
func Hold(updating []*clusterv1.Machine, now time.Time) (hold bool, wait time.Duration, notStarted []NotStarted) {
	for _, m := range updating {
		since, ok := NotStartedSince(m)
		if !ok {
			hold = true
			continue
		}
		if left := since.Add(StartTimeout).Sub(now); left > 0 {
			hold = true
			if wait == 0 || left < wait {
				wait = left
			}
			continue
		}
		notStarted = append(notStarted, NotStarted{Machine: m.Name, Since: since})
	}
	return hold, wait, notStarted
}

// NotStartedMessage is RollingOut's report of updates CAPI has not started: which
// Machines, what to check, what goes on meanwhile and how to get out.
func NotStartedMessage(machines []string) string {
	return "Cluster API has not started the in-place update of Machine " + strings.Join(machines, ", ") +
		": check that Cluster API's InPlaceUpdates feature gate is on (clusterctl's EXP_IN_PLACE_UPDATES, which also sets capk3s's);" +
		" scaling and remediation go on, the rollout waits (delete the Machine to replace it instead)"
}
