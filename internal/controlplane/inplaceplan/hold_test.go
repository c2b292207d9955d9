package inplaceplan

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	"github.com/capk3s/capk3s/internal/runtimehooks"
)

var holdNow = time.Date(2027, 6, 1, 12, 0, 0, 0, time.UTC)

// marked is a Machine marked for an in-place update (the in-progress annotation and
// the pending UpdateMachine hook) that CAPI shows as updating since since, with
// message; a zero since shows no Updating condition.
func marked(name string, since time.Time, message string) *clusterv1.Machine {
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{clusterv1.UpdateInProgressAnnotation: ""}}}
	runtimehooks.MarkPending(runtimehooksv1.UpdateMachine, m)
	if !since.IsZero() {
		conditions.Set(m, metav1.Condition{Type: clusterv1.MachineUpdatingCondition, Status: metav1.ConditionTrue,
			Reason: clusterv1.MachineInPlaceUpdatingReason, Message: message, LastTransitionTime: metav1.NewTime(since)})
	}
	return m
}

func TestNotStartedSince(t *testing.T) {
	since := holdNow.Add(-time.Minute)
	unmarked := marked("a", since, capiUpdatingMessage)
	delete(unmarked.Annotations, clusterv1.UpdateInProgressAnnotation)
	hookDone := marked("a", since, capiUpdatingMessage)
	delete(hookDone.Annotations, runtimev1.PendingHooksAnnotation)
	for _, tc := range []struct {
		name   string
		m      *clusterv1.Machine
		wantOK bool
	}{
		{"CAPI's bare message: not started", marked("a", since, capiUpdatingMessage), true},
		{"the bare message with spaces", marked("a", since, " "+capiUpdatingMessage+"\n"), true},
		{"the extension's message: started", marked("a", since, capiUpdatingMessage+": upgrading k3s"), false},
		{"not shown as updating yet", marked("a", time.Time{}, ""), false},
		{"not marked", unmarked, false},
		{"the hook no longer pending", hookDone, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := NotStartedSince(tc.m)
			if ok != tc.wantOK || ok && !got.Equal(since) {
				t.Errorf("NotStartedSince = %v, %v; want %v since %v", got, ok, tc.wantOK, since)
			}
		})
	}
}

func TestHold(t *testing.T) {
	working := marked("working", holdNow.Add(-time.Hour), capiUpdatingMessage+": upgrading k3s")
	fresh := marked("fresh", holdNow.Add(-2*time.Minute), capiUpdatingMessage)
	fresher := marked("fresher", holdNow.Add(-time.Minute), capiUpdatingMessage)
	stuck := marked("stuck", holdNow.Add(-StartTimeout-time.Minute), capiUpdatingMessage)
	for _, tc := range []struct {
		name           string
		updating       []*clusterv1.Machine
		wantHold       bool
		wantWait       time.Duration
		wantNotStarted []NotStarted
	}{
		{"nothing under way", nil, false, 0, nil},
		{"an update CAPI works on holds, however long", []*clusterv1.Machine{working}, true, 0, nil},
		{"one CAPI may still start holds until the timeout, the soonest first", []*clusterv1.Machine{fresh, fresher}, true, 3 * time.Minute, nil},
		{"one not started in time holds nothing", []*clusterv1.Machine{stuck}, false, 0,
			[]NotStarted{{Machine: "stuck", Since: holdNow.Add(-StartTimeout - time.Minute)}}},
		{"beside one CAPI works on", []*clusterv1.Machine{stuck, working}, true, 0,
			[]NotStarted{{Machine: "stuck", Since: holdNow.Add(-StartTimeout - time.Minute)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hold, wait, notStarted := Hold(tc.updating, holdNow)
			if hold != tc.wantHold || wait != tc.wantWait || !reflect.DeepEqual(notStarted, tc.wantNotStarted) {
				t.Errorf("Hold = %v, %v, %v; want %v, %v, %v", hold, wait, notStarted, tc.wantHold, tc.wantWait, tc.wantNotStarted)
			}
		})
	}
}

func TestNotStartedMessageNamesTheMachinesAndTheWayOut(t *testing.T) {
	msg := NotStartedMessage([]string{"a (since x)", "b (since y)"})
	for _, want := range []string{"a (since x), b (since y)", "InPlaceUpdates", "delete the Machine"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}
