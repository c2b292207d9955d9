package sim

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

func TestNodeHealthOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		value   *string
		want    nodeHealth
		wantErr string
	}{
		{name: "no annotation", want: nodeHealthy},
		{name: "true", value: new("true"), want: nodeHealthy},
		{name: "false", value: new("false"), want: nodeKubeletNotReady},
		{name: "unknown, any case, spaces", value: new(" Unknown "), want: nodeK3sStopped},
		{name: "unknown value", value: new("down"), wantErr: `is "down"; want "true", "false" or "unknown"`},
		{name: "empty", value: new(""), wantErr: `is ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sm := &simv1.SimMachine{}
			if tt.value != nil {
				sm.Annotations = map[string]string{simv1.NodeReadyAnnotation: *tt.value}
			}
			got, err := nodeHealthOf(sm)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("nodeHealthOf = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// registeredNode is a Node as register leaves it, with a user's taint, at time then.
func registeredNode(then metav1.Time) *corev1.Node {
	return &corev1.Node{
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Conditions: kubeletConditions(then)},
	}
}

func TestSetNodeHealth(t *testing.T) {
	t.Parallel()
	then := metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	now := metav1.NewTime(then.Add(time.Hour))
	userTaint := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}

	type cond struct {
		status     corev1.ConditionStatus
		reason     string
		transition metav1.Time
		heartbeat  metav1.Time
	}
	tests := []struct {
		name          string
		h             nodeHealth
		wantReady     cond
		wantPressure  cond
		wantTaintKeys []string
	}{
		{
			name:         "kubelet reports NotReady",
			h:            nodeKubeletNotReady,
			wantReady:    cond{corev1.ConditionFalse, nodeKubeletNotReadyReason, now, now},
			wantPressure: cond{corev1.ConditionFalse, "KubeletHasSufficientMemory", then, then},
			// The user's taint, then NoSchedule and NoExecute.
			wantTaintKeys: []string{"dedicated", corev1.TaintNodeNotReady, corev1.TaintNodeNotReady},
		},
		{
			name: "k3s stopped",
			h:    nodeK3sStopped,
			// The lifecycle controller keeps the last heartbeat it saw.
			wantReady:     cond{corev1.ConditionUnknown, nodeStatusUnknown, now, then},
			wantPressure:  cond{corev1.ConditionUnknown, nodeStatusUnknown, now, then},
			wantTaintKeys: []string{"dedicated", corev1.TaintNodeUnreachable, corev1.TaintNodeUnreachable},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := registeredNode(then)
			statusChanged, taintsChanged := setNodeHealth(n, tt.h, now)
			if !statusChanged || !taintsChanged {
				t.Fatalf("changed = %v, %v; want true, true", statusChanged, taintsChanged)
			}
			check := func(typ corev1.NodeConditionType, want cond) {
				t.Helper()
				c := nodeCondition(n, typ)
				if c == nil {
					t.Fatalf("no %s condition", typ)
				}
				got := cond{c.Status, c.Reason, c.LastTransitionTime, c.LastHeartbeatTime}
				if !got.transition.Equal(&want.transition) || !got.heartbeat.Equal(&want.heartbeat) || got.status != want.status || got.reason != want.reason {
					t.Errorf("%s = %+v, want %+v", typ, got, want)
				}
			}
			check(corev1.NodeReady, tt.wantReady)
			check(corev1.NodeMemoryPressure, tt.wantPressure)
			if len(n.Status.Conditions) != 4 {
				t.Errorf("%d conditions, want 4", len(n.Status.Conditions))
			}
			var keys []string
			for _, tn := range n.Spec.Taints {
				keys = append(keys, tn.Key)
			}
			if strings.Join(keys, ",") != strings.Join(tt.wantTaintKeys, ",") {
				t.Errorf("taints %v, want keys %v", n.Spec.Taints, tt.wantTaintKeys)
			}
			if n.Spec.Taints[0] != userTaint {
				t.Errorf("the user's taint became %v", n.Spec.Taints[0])
			}
			if e1, e2 := n.Spec.Taints[1].Effect, n.Spec.Taints[2].Effect; e1 != corev1.TaintEffectNoSchedule || e2 != corev1.TaintEffectNoExecute {
				t.Errorf("taint effects %s, %s; want NoSchedule, NoExecute", e1, e2)
			}

			// Again, later: nothing changes, so health checks keep timing from the
			// first transition.
			later := metav1.NewTime(now.Add(time.Minute))
			if s, tc := setNodeHealth(n, tt.h, later); s || tc {
				t.Errorf("second pass changed = %v, %v; want false, false", s, tc)
			}
			check(corev1.NodeReady, tt.wantReady)

			// Healthy again: Ready from now, the pressure conditions as the kubelet
			// posts them, the lifecycle taints gone and the user's kept.
			if s, tc := setNodeHealth(n, nodeHealthy, later); !s || !tc {
				t.Errorf("recovery changed = %v, %v; want true, true", s, tc)
			}
			check(corev1.NodeReady, cond{corev1.ConditionTrue, "KubeletReady", later, later})
			if len(n.Spec.Taints) != 1 || n.Spec.Taints[0] != userTaint {
				t.Errorf("taints after recovery %v, want only %v", n.Spec.Taints, userTaint)
			}
		})
	}
}

func TestSetNodeHealthOnHealthyNodeChangesNothing(t *testing.T) {
	t.Parallel()
	then := metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	n := registeredNode(then)
	if s, tc := setNodeHealth(n, nodeHealthy, metav1.NewTime(then.Add(time.Hour))); s || tc {
		t.Fatalf("changed = %v, %v; want false, false", s, tc)
	}
	if c := nodeCondition(n, corev1.NodeReady); !c.LastTransitionTime.Equal(&then) {
		t.Errorf("Ready's transition moved to %s", c.LastTransitionTime)
	}
}

func TestSetNodeHealthFromNotReadyToStopped(t *testing.T) {
	t.Parallel()
	then := metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	now := metav1.NewTime(then.Add(time.Minute))
	n := registeredNode(then)
	setNodeHealth(n, nodeKubeletNotReady, then)
	if s, tc := setNodeHealth(n, nodeK3sStopped, now); !s || !tc {
		t.Fatalf("changed = %v, %v; want true, true", s, tc)
	}
	if c := nodeCondition(n, corev1.NodeReady); c.Status != corev1.ConditionUnknown || !c.LastTransitionTime.Equal(&now) {
		t.Errorf("Ready = %s since %s, want Unknown since %s", c.Status, c.LastTransitionTime, now)
	}
	for _, tn := range n.Spec.Taints {
		if tn.Key == corev1.TaintNodeNotReady {
			t.Errorf("the not-ready taint stayed: %v", n.Spec.Taints)
		}
	}
}

// testCluster is a workload cluster with members up and no API, as the member
// bookkeeping sees it.
func testCluster(members ...string) (*workloadCluster, *int) {
	changes := 0
	c := &workloadCluster{
		key:      client.ObjectKey{Namespace: "ns", Name: "c"},
		onChange: func(client.ObjectKey) { changes++ },
		members:  map[string]*member{},
		removed:  map[string]string{},
	}
	for _, m := range members {
		c.members[m] = &member{name: m + "-x", up: true}
	}
	return c, &changes
}

func TestSetMemberUpKeepsQuorumWithAMajority(t *testing.T) {
	t.Parallel()
	c, changes := testCluster("a", "b", "c")
	if err := c.setMemberUp("a", false); err != nil {
		t.Fatal(err)
	}
	if _, lost := c.status(); lost {
		t.Fatal("one of three members down lost quorum")
	}
	if *changes != 1 {
		t.Errorf("%d change notices, want 1", *changes)
	}
	// Down again, and a Node that is no member: nothing happens.
	for _, n := range []string{"a", "agent"} {
		if err := c.setMemberUp(n, false); err != nil {
			t.Fatal(err)
		}
	}
	if *changes != 1 {
		t.Errorf("%d change notices after no-op calls, want 1", *changes)
	}
	// Up again: a second member may now go down.
	if err := c.setMemberUp("a", true); err != nil {
		t.Fatal(err)
	}
	if err := c.setMemberUp("b", false); err != nil {
		t.Fatal(err)
	}
	if _, lost := c.status(); lost {
		t.Fatal("quorum lost with two of three members up")
	}
}

func TestSetMemberUpLosesQuorumForGood(t *testing.T) {
	t.Parallel()
	c, _ := testCluster("a", "b", "c")
	for _, n := range []string{"a", "b"} {
		if err := c.setMemberUp(n, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, lost := c.status(); !lost {
		t.Fatal("two of three members down kept quorum")
	}
	if _, _, err := c.ready(); !errors.Is(err, errQuorumLost) {
		t.Errorf("ready() = %v, want errQuorumLost", err)
	}
	// k3s coming back does not bring a simulated cluster back.
	if err := c.setMemberUp("a", true); err != nil {
		t.Fatal(err)
	}
	if _, lost := c.status(); !lost {
		t.Error("a member coming back restored quorum")
	}
}

func TestRemovedDownMemberNoLongerCounts(t *testing.T) {
	t.Parallel()
	// A stopped server's member is removed, as capk3s asks k3s when it replaces
	// the server: the two left are the whole cluster, and one of them may stop
	// only at the cost of quorum (1 of 2 is no majority).
	c, _ := testCluster("a", "b", "c")
	if err := c.setMemberUp("a", false); err != nil {
		t.Fatal(err)
	}
	if _, removed, err := c.removeMember("a"); err != nil || !removed {
		t.Fatalf("removeMember = %v, %v", removed, err)
	}
	if err := c.setMemberUp("b", false); err != nil {
		t.Fatal(err)
	}
	if _, lost := c.status(); !lost {
		t.Error("one of two members up kept quorum")
	}
}

func TestMembersStoppingAfterQuorumLossAreDown(t *testing.T) {
	t.Parallel()
	// A restore deletes every server: quorum goes with the second, and the third
	// stopping must still count as stopped, or a cluster-reset on the new first
	// server would be refused for an old server that no longer runs.
	c, _ := testCluster("a", "b", "c")
	for _, n := range []string{"a", "b", "c"} {
		if err := c.setMemberUp(n, false); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	up := c.upMemberNamesLocked()
	c.mu.Unlock()
	if len(up) != 0 {
		t.Errorf("members %v still up after every server stopped", up)
	}
	if _, lost := c.status(); !lost {
		t.Error("quorum came back")
	}
}
