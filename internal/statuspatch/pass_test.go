package statuspatch

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// The writes themselves run against an apiserver in the reconcilers' tests
// (internal/controlplane, internal/bootstrap); this checks how a change is parted, and
// when it is a status change alone.
func TestSplit(t *testing.T) {
	read := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", ResourceVersion: "7"}}
	read.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Waiting",
		LastTransitionTime: metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))}}

	tests := []struct {
		name       string
		change     func(*bootstrapv1.KThreesConfig)
		rest, stat string // the JSON expected, "" for none
		onlyStatus bool   // what OnlyStatusChanged says
	}{
		{name: "nothing", change: func(*bootstrapv1.KThreesConfig) {}},
		{name: "a time within the stored second", change: func(c *bootstrapv1.KThreesConfig) {
			c.Status.Conditions[0].LastTransitionTime = metav1.NewTime(c.Status.Conditions[0].LastTransitionTime.Add(300 * time.Millisecond))
		}},
		{name: "status only", change: func(c *bootstrapv1.KThreesConfig) {
			c.Status.DataSecretName = "c"
			c.Status.Initialization.DataSecretCreated = ptr.To(true)
		}, stat: `{"dataSecretName":"c","initialization":{"dataSecretCreated":true}}`, onlyStatus: true},
		{name: "metadata and status", change: func(c *bootstrapv1.KThreesConfig) {
			c.Finalizers = []string{"f"}
			c.Status.ObservedGeneration = 2
		}, rest: `{"metadata":{"finalizers":["f"]}}`, stat: `{"observedGeneration":2}`},
		{name: "metadata only", change: func(c *bootstrapv1.KThreesConfig) {
			c.Labels = map[string]string{"l": "v"}
		}, rest: `{"metadata":{"labels":{"l":"v"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := read.DeepCopy()
			tt.change(after)
			rest, status, err := split(read, after)
			if err != nil {
				t.Fatal(err)
			}
			if string(rest) != tt.rest {
				t.Errorf("metadata and spec patch %s, want %q", rest, tt.rest)
			}
			if !jsonEqual(t, status, tt.stat) {
				t.Errorf("status patch %s, want %q", status, tt.stat)
			}
			only, err := New(read).OnlyStatusChanged(after)
			if err != nil || only != tt.onlyStatus {
				t.Errorf("OnlyStatusChanged = %v, %v; want %v", only, err, tt.onlyStatus)
			}
		})
	}
}

func jsonEqual(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	if got == nil || want == "" {
		return got == nil && want == ""
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return string(gb) == string(wb)
}
