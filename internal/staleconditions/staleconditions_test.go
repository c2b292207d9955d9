package staleconditions

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStale(t *testing.T) {
	owned := []string{"Available", "TokenAvailable"}
	list := []metav1.Condition{
		{Type: "Available", Status: metav1.ConditionTrue, Reason: "Available"},
		{Type: "TokenAvailable", Status: metav1.ConditionTrue}, // the v1beta1 contract's True, without a reason
		{Type: "Paused", Status: metav1.ConditionFalse, Reason: "NotPaused"},
		{Type: "MachinesSpecUpToDate", Status: metav1.ConditionFalse, Reason: "RollingUpdateInProgress"},
		{Type: "Paused", Status: metav1.ConditionFalse}, // kept type, no reason
	}
	got := Stale(list, owned)
	want := []string{"TokenAvailable", "MachinesSpecUpToDate", "Paused"}
	if !slices.Equal(got, want) {
		t.Errorf("Stale = %v, want %v", got, want)
	}
	if got := Stale(list[:1], owned); got != nil {
		t.Errorf("Stale of valid, owned conditions = %v, want none", got)
	}
}
