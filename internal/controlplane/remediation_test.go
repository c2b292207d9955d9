package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/workload"
)

var remediationNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// remServer is a control plane Machine for the pure tests; age orders servers.
type remServer struct {
	name      string
	age       time.Duration
	unhealthy bool // marked by a MachineHealthCheck for its owner to remediate
	ready     bool // its node is Ready
	deleting  bool
	// remediationFor, when set, makes it a replacement of that remediation.
	remediationFor *remediationData
	// rawRemediationFor, when set, is its remediation-for annotation as is.
	rawRemediationFor string
	// markedAgo and readyAgo, when set, are how long ago the health check marked it
	// unhealthy and how long ago its node's Ready condition last changed.
	markedAgo, readyAgo time.Duration
	// memberRemoved: k3s has removed its node's etcd member (newer k3s: removed-node-name
	// alone, the remove annotation consumed), though the node is still Ready.
	memberRemoved bool
}

func (s remServer) machine(t *testing.T) *clusterv1.Machine {
	t.Helper()
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{
		Name: s.name, CreationTimestamp: metav1.NewTime(remediationNow.Add(-s.age)),
	}}
	if s.deleting {
		m.DeletionTimestamp = ptr.To(metav1.NewTime(remediationNow.Add(-time.Minute)))
	}
	if s.unhealthy {
		markUnhealthy(m)
		if s.markedAgo != 0 {
			c := conditions.Get(m, clusterv1.MachineHealthCheckSucceededCondition)
			c.LastTransitionTime = ago(s.markedAgo)
			conditions.Set(m, *c)
		}
	}
	if s.remediationFor != nil {
		v, err := s.remediationFor.marshal()
		if err != nil {
			t.Fatal(err)
		}
		m.Annotations = map[string]string{remediationForAnnotation: v}
	}
	if s.rawRemediationFor != "" {
		m.Annotations = map[string]string{remediationForAnnotation: s.rawRemediationFor}
	}
	return m
}

// markUnhealthy sets the conditions a MachineHealthCheck sets on a server it hands to
// its owner for remediation.
func markUnhealthy(m *clusterv1.Machine) {
	conditions.Set(m, metav1.Condition{Type: clusterv1.MachineHealthCheckSucceededCondition,
		Status: metav1.ConditionFalse, Reason: clusterv1.MachineHealthCheckNodeDeletedReason})
	conditions.Set(m, metav1.Condition{Type: clusterv1.MachineOwnerRemediatedCondition,
		Status: metav1.ConditionFalse, Reason: clusterv1.MachineOwnerRemediatedWaitingForRemediationReason})
}

func readyNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

func observe(t *testing.T, servers []remServer) (collections.Machines, workload.Nodes) {
	t.Helper()
	machines, nodes := collections.New(), workload.Nodes{}
	for _, s := range servers {
		machines.Insert(s.machine(t))
		if s.ready {
			nodes[s.name] = readyNode(s.name)
			if s.readyAgo != 0 {
				nodes[s.name].Status.Conditions[0].LastTransitionTime = ago(s.readyAgo)
			}
			if s.memberRemoved {
				nodes[s.name].Annotations = map[string]string{k3s.EtcdRemovedNodeNameAnnotation: s.name + "-1a2b3c4d"}
			}
		}
	}
	return machines, nodes
}

func remediationKCP(initialized bool, replicas int32, strategy *controlplanev1.RemediationStrategy) *controlplanev1.KThreesControlPlane {
	kcp := &controlplanev1.KThreesControlPlane{}
	kcp.Spec.Replicas = ptr.To(replicas)
	kcp.Spec.RemediationStrategy = strategy
	if initialized {
		kcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	}
	return kcp
}

func ago(d time.Duration) metav1.Time { return metav1.NewTime(remediationNow.Add(-d)) }

func TestDecideRemediation(t *testing.T) {
	healthy := func(name string, age time.Duration) remServer { return remServer{name: name, age: age, ready: true} }
	sick := func(name string, age time.Duration) remServer {
		return remServer{name: name, age: age, unhealthy: true}
	}
	retryOf := func(s remServer, count int32, at time.Duration) remServer {
		s.remediationFor = &remediationData{Machine: "old", Timestamp: ago(at), RetryCount: count}
		return s
	}
	strategy := func(maxRetry *int32, retryPeriod time.Duration, minHealthy *time.Duration) *controlplanev1.RemediationStrategy {
		rs := &controlplanev1.RemediationStrategy{MaxRetry: maxRetry, RetryPeriod: metav1.Duration{Duration: retryPeriod}}
		if minHealthy != nil {
			rs.MinHealthyPeriod = &metav1.Duration{Duration: *minHealthy}
		}
		return rs
	}
	inProgress := func(machine string) map[string]string {
		v, _ := remediationData{Machine: machine, Timestamp: ago(time.Minute)}.marshal()
		return map[string]string{remediationInProgressAnnotation: v}
	}

	tests := []struct {
		name        string
		kcp         *controlplanev1.KThreesControlPlane
		annotations map[string]string
		servers     []remServer
		noNodes     bool // the workload cluster cannot be reached

		wantVictim     string
		wantRetryCount int32
		wantReason     string
		wantMessage    string // a substring of the condition message
		wantWait       time.Duration
		wantRecheck    time.Duration
		wantInProgress bool
		wantDropStale  bool
	}{
		{
			name:       "nothing unhealthy",
			kcp:        remediationKCP(true, 3, nil),
			servers:    []remServer{healthy("a", 3*time.Hour), healthy("b", 2*time.Hour), healthy("c", time.Hour)},
			wantReason: notRemediatingReason,
		},
		{
			name:       "3 servers, 1 unhealthy: quorum holds, remediated",
			kcp:        remediationKCP(true, 3, nil),
			servers:    []remServer{healthy("a", 3*time.Hour), sick("b", 2*time.Hour), healthy("c", time.Hour)},
			wantVictim: "b", wantReason: remediatingReason, wantMessage: "Deleting unhealthy Machine b",
		},
		{
			name:       "3 servers, 2 unhealthy: would lose quorum",
			kcp:        remediationKCP(true, 3, nil),
			servers:    []remServer{healthy("a", 3*time.Hour), sick("b", 2*time.Hour), sick("c", time.Hour)},
			wantReason: remediationWouldLoseQuorumReason, wantMessage: "would lose etcd quorum: 2 servers would remain, 1 of them healthy, and quorum needs 2",
		},
		{
			name: "3 servers, 1 unhealthy, 1 Ready whose etcd member k3s removed: would lose quorum",
			kcp:  remediationKCP(true, 3, nil),
			servers: []remServer{healthy("a", 3*time.Hour), sick("b", 2*time.Hour),
				{name: "c", age: time.Hour, ready: true, memberRemoved: true}},
			wantReason: remediationWouldLoseQuorumReason, wantMessage: "2 servers would remain, 1 of them healthy, and quorum needs 2",
		},
		{
			name: "5 servers, 2 unhealthy: the oldest is remediated",
			kcp:  remediationKCP(true, 5, nil),
			servers: []remServer{healthy("a", 5*time.Hour), sick("b", 2*time.Hour), healthy("c", 3*time.Hour),
				sick("d", 4*time.Hour), healthy("e", time.Hour)},
			wantVictim: "d", wantReason: remediatingReason,
		},
		{
			name: "an unhealthy server without a Ready node goes before an older one with",
			kcp:  remediationKCP(true, 5, nil),
			servers: []remServer{healthy("a", 5*time.Hour), {name: "b", age: 4 * time.Hour, unhealthy: true, ready: true},
				sick("c", 2*time.Hour), healthy("d", 3*time.Hour), healthy("e", time.Hour)},
			wantVictim: "c", wantReason: remediatingReason,
		},
		{
			name:       "2 servers, 1 unhealthy: the other alone keeps quorum",
			kcp:        remediationKCP(true, 2, nil),
			servers:    []remServer{healthy("a", 2*time.Hour), sick("b", time.Hour)},
			wantVictim: "b", wantReason: remediatingReason,
		},
		{
			name:       "the only server of an initialized cluster is kept",
			kcp:        remediationKCP(true, 1, nil),
			servers:    []remServer{sick("a", time.Hour)},
			wantReason: remediationWouldLoseQuorumReason, wantMessage: "0 servers would remain",
		},
		{
			name:       "the first server before initialization is remediated",
			kcp:        remediationKCP(false, 3, nil),
			servers:    []remServer{sick("a", time.Hour)},
			noNodes:    true,
			wantVictim: "a", wantReason: remediatingReason,
		},
		{
			name: "a server whose node became Ready after it was marked waits for the health check to look again",
			kcp:  remediationKCP(true, 3, nil),
			servers: []remServer{healthy("a", 3*time.Hour),
				{name: "b", age: 2 * time.Hour, unhealthy: true, ready: true, markedAgo: 2 * time.Minute, readyAgo: 30 * time.Second},
				healthy("c", time.Hour)},
			wantReason:  remediationWaitingForHealthCheckReason,
			wantMessage: "its node became Ready at 2025-03-01T11:59:30Z, after the MachineHealthCheck marked it unhealthy at 2025-03-01T11:58:00Z; waiting until 2025-03-01T12:01:30Z",
			wantRecheck: healthCheckRecheckGrace - 30*time.Second,
		},
		{
			name: "a node Ready time ahead of this clock holds nothing",
			kcp:  remediationKCP(true, 3, nil),
			servers: []remServer{healthy("a", 3*time.Hour),
				{name: "b", age: 2 * time.Hour, unhealthy: true, ready: true, markedAgo: 2 * time.Minute, readyAgo: -time.Hour},
				healthy("c", time.Hour)},
			wantVictim: "b", wantReason: remediatingReason,
		},
		{
			name: "a stale mark is passed over for a current one",
			kcp:  remediationKCP(true, 5, nil),
			servers: []remServer{healthy("a", 5*time.Hour),
				{name: "b", age: 4 * time.Hour, unhealthy: true, ready: true, markedAgo: 2 * time.Minute, readyAgo: 30 * time.Second},
				sick("c", 2*time.Hour), healthy("d", 3*time.Hour), healthy("e", time.Hour)},
			wantVictim: "c", wantReason: remediatingReason,
		},
		{
			name: "a node Ready since before the mark does not make it stale",
			kcp:  remediationKCP(true, 3, nil),
			servers: []remServer{healthy("a", 3*time.Hour),
				{name: "b", age: 2 * time.Hour, unhealthy: true, ready: true, markedAgo: time.Minute, readyAgo: time.Hour},
				healthy("c", time.Hour)},
			wantVictim: "b", wantReason: remediatingReason,
		},
		{
			name: "a mark the health check kept long after the node became Ready is trusted",
			kcp:  remediationKCP(true, 3, nil),
			servers: []remServer{healthy("a", 3*time.Hour),
				{name: "b", age: 2 * time.Hour, unhealthy: true, ready: true, markedAgo: time.Hour, readyAgo: healthCheckRecheckGrace},
				healthy("c", time.Hour)},
			wantVictim: "b", wantReason: remediatingReason,
		},
		{
			name:       "another machine is being deleted",
			kcp:        remediationKCP(true, 3, nil),
			servers:    []remServer{healthy("a", 3*time.Hour), sick("b", 2*time.Hour), {name: "c", age: time.Hour, ready: true, deleting: true}},
			wantReason: remediationWaitingForDeletionReason, wantMessage: "another machine is being deleted (c)",
		},
		{
			name:       "another machine is being deleted, before initialization too",
			kcp:        remediationKCP(false, 1, nil),
			servers:    []remServer{sick("a", time.Hour), {name: "b", age: 2 * time.Hour, deleting: true}},
			wantReason: remediationWaitingForDeletionReason,
		},
		{
			name:       "another server is still provisioning",
			kcp:        remediationKCP(true, 3, nil),
			servers:    []remServer{healthy("a", 3*time.Hour), sick("b", 2*time.Hour), {name: "c", age: time.Minute}},
			wantReason: remediationWaitingForProvisioningReason, wantMessage: "waiting for the node of Machine c to be Ready",
		},
		{
			name:       "the workload cluster's nodes cannot be read",
			kcp:        remediationKCP(true, 3, nil),
			servers:    []remServer{healthy("a", 3*time.Hour), sick("b", 2*time.Hour), healthy("c", time.Hour)},
			noNodes:    true,
			wantReason: remediationNodesUnknownReason,
		},
		{
			name:       "a failed replacement is retried, counting the retry",
			kcp:        remediationKCP(true, 3, strategy(ptr.To[int32](3), 5*time.Minute, nil)),
			servers:    []remServer{healthy("a", 3*time.Hour), retryOf(sick("b", 10*time.Minute), 1, 10*time.Minute), healthy("c", time.Hour)},
			wantVictim: "b", wantRetryCount: 2, wantReason: remediatingReason, wantMessage: "(retry 2)",
		},
		{
			name:       "maxRetry reached",
			kcp:        remediationKCP(true, 3, strategy(ptr.To[int32](3), 0, nil)),
			servers:    []remServer{healthy("a", 3*time.Hour), retryOf(sick("b", 10*time.Minute), 3, 10*time.Minute), healthy("c", time.Hour)},
			wantReason: remediationMaxRetryReachedReason, wantMessage: "maxRetry 3 reached",
		},
		{
			name:       "maxRetry 0 allows no retry",
			kcp:        remediationKCP(true, 3, strategy(ptr.To[int32](0), 0, nil)),
			servers:    []remServer{healthy("a", 3*time.Hour), retryOf(sick("b", 10*time.Minute), 0, 10*time.Minute), healthy("c", time.Hour)},
			wantReason: remediationMaxRetryReachedReason, wantMessage: "maxRetry 0 reached",
		},
		{
			name:       "maxRetry 0 still allows a first remediation",
			kcp:        remediationKCP(true, 3, strategy(ptr.To[int32](0), 0, nil)),
			servers:    []remServer{healthy("a", 3*time.Hour), sick("b", 2*time.Hour), healthy("c", time.Hour)},
			wantVictim: "b", wantReason: remediatingReason,
		},
		{
			name:       "retryPeriod not elapsed: wait for the rest of it",
			kcp:        remediationKCP(true, 3, strategy(nil, 5*time.Minute, nil)),
			servers:    []remServer{healthy("a", 3*time.Hour), retryOf(sick("b", time.Minute), 1, time.Minute), healthy("c", time.Hour)},
			wantReason: remediationWaitingForRetryPeriodReason, wantMessage: "waiting for retryPeriod 5m0s", wantWait: 4 * time.Minute,
		},
		{
			name:       "maxRetry is reported before a retryPeriod wait that would end in it",
			kcp:        remediationKCP(true, 3, strategy(ptr.To[int32](1), 5*time.Minute, nil)),
			servers:    []remServer{healthy("a", 3*time.Hour), retryOf(sick("b", time.Minute), 1, time.Minute), healthy("c", time.Hour)},
			wantReason: remediationMaxRetryReachedReason,
		},
		{
			name:       "minHealthyPeriod (default 1h) elapsed: a new failure, the counter resets",
			kcp:        remediationKCP(true, 3, strategy(ptr.To[int32](3), 5*time.Minute, nil)),
			servers:    []remServer{healthy("a", 3*time.Hour), retryOf(sick("b", 2*time.Hour), 7, 2*time.Hour), healthy("c", time.Hour)},
			wantVictim: "b", wantRetryCount: 0, wantReason: remediatingReason,
		},
		{
			name: "a custom minHealthyPeriod elapsed: the counter resets",
			kcp:  remediationKCP(true, 3, strategy(ptr.To[int32](3), 0, ptr.To(10*time.Minute))),
			servers: []remServer{healthy("a", 3*time.Hour), retryOf(sick("b", 20*time.Minute), 3, 20*time.Minute),
				healthy("c", time.Hour)},
			wantVictim: "b", wantRetryCount: 0, wantReason: remediatingReason,
		},
		{
			name:       "within a custom minHealthyPeriod it is a retry",
			kcp:        remediationKCP(true, 3, strategy(ptr.To[int32](3), 0, ptr.To(10*time.Minute))),
			servers:    []remServer{healthy("a", 3*time.Hour), retryOf(sick("b", 5*time.Minute), 3, 5*time.Minute), healthy("c", time.Hour)},
			wantReason: remediationMaxRetryReachedReason,
		},
		{
			name: "an unreadable remediation-for annotation counts as a first failure",
			kcp:  remediationKCP(true, 3, strategy(ptr.To[int32](0), 0, nil)),
			servers: []remServer{healthy("a", 3*time.Hour),
				{name: "b", age: 2 * time.Hour, unhealthy: true, rawRemediationFor: "not json"}, healthy("c", time.Hour)},
			wantVictim: "b", wantReason: remediatingReason,
		},
		{
			name:           "a remediation in progress waits for its machine to go",
			kcp:            remediationKCP(true, 3, nil),
			annotations:    inProgress("b"),
			servers:        []remServer{healthy("a", 3*time.Hour), {name: "b", age: 2 * time.Hour, unhealthy: true, deleting: true}, sick("c", time.Hour)},
			wantInProgress: true, wantReason: remediatingReason, wantMessage: "Deleting unhealthy Machine b; its replacement is created once it is gone",
		},
		{
			name:           "a remediation in progress waits for its replacement",
			kcp:            remediationKCP(true, 3, nil),
			annotations:    inProgress("b"),
			servers:        []remServer{healthy("a", 3*time.Hour), healthy("c", time.Hour)},
			wantInProgress: true, wantReason: remediatingReason, wantMessage: "Creating a replacement for unhealthy Machine b",
		},
		{
			name:        "an in-progress annotation whose replacement exists is dropped",
			kcp:         remediationKCP(true, 4, nil),
			annotations: inProgress("b"),
			servers: []remServer{healthy("a", 3*time.Hour), healthy("c", time.Hour),
				{name: "d", age: time.Minute, ready: true, remediationFor: &remediationData{Machine: "b", Timestamp: ago(time.Minute)}}},
			wantDropStale: true, wantReason: notRemediatingReason,
		},
		{
			name:          "an in-progress annotation is dropped when replicas were lowered, and the next remediation proceeds",
			kcp:           remediationKCP(true, 3, nil),
			annotations:   inProgress("x"),
			servers:       []remServer{healthy("a", 3*time.Hour), sick("b", 2*time.Hour), healthy("c", time.Hour)},
			wantDropStale: true, wantVictim: "b", wantReason: remediatingReason,
		},
		{
			name:          "an unreadable in-progress annotation is dropped",
			kcp:           remediationKCP(true, 3, nil),
			annotations:   map[string]string{remediationInProgressAnnotation: "{"},
			servers:       []remServer{healthy("a", 3*time.Hour), healthy("c", time.Hour)},
			wantDropStale: true, wantReason: notRemediatingReason,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.kcp.Annotations = tt.annotations
			machines, nodes := observe(t, tt.servers)
			if tt.noNodes {
				nodes = nil
			}

			d := decideRemediation(tt.kcp, machines, nodes, remediationNow)

			gotVictim := ""
			if d.victim != nil {
				gotVictim = d.victim.Name
			}
			if gotVictim != tt.wantVictim {
				t.Errorf("victim = %q, want %q (reason %s: %s)", gotVictim, tt.wantVictim, d.reason, d.message)
			}
			if d.reason != tt.wantReason {
				t.Errorf("reason = %q, want %q (message %q)", d.reason, tt.wantReason, d.message)
			}
			if !strings.Contains(d.message, tt.wantMessage) {
				t.Errorf("message = %q, want it to contain %q", d.message, tt.wantMessage)
			}
			if d.wait != tt.wantWait {
				t.Errorf("wait = %s, want %s", d.wait, tt.wantWait)
			}
			if d.recheck != tt.wantRecheck {
				t.Errorf("recheck = %s, want %s", d.recheck, tt.wantRecheck)
			}
			if d.inProgress != tt.wantInProgress || d.dropStaleInProgress != tt.wantDropStale {
				t.Errorf("inProgress, dropStale = %v, %v; want %v, %v", d.inProgress, d.dropStaleInProgress, tt.wantInProgress, tt.wantDropStale)
			}
			if d.victim != nil {
				want := remediationData{Machine: tt.wantVictim, Timestamp: metav1.NewTime(remediationNow), RetryCount: tt.wantRetryCount}
				if d.data != want {
					t.Errorf("remediation data = %+v, want %+v", d.data, want)
				}
			}
		})
	}
}

func TestReplacementPreflightRemediating(t *testing.T) {
	tests := []struct {
		name    string
		servers []remServer
		want    string // a substring; "" for allowed
	}{
		{name: "no server left (first server remediated)", servers: nil},
		{name: "one server left", servers: []remServer{{name: "a", ready: true}}},
		{name: "two healthy servers left of three", servers: []remServer{{name: "a", ready: true}, {name: "b", ready: true}}},
		{name: "four left of five, one of them unhealthy", servers: []remServer{
			{name: "a", ready: true}, {name: "b", ready: true}, {name: "c", ready: true}, {name: "d", unhealthy: true}}},
		{name: "quorum at risk with the new member", servers: []remServer{
			{name: "a", ready: true}, {name: "b", unhealthy: true}, {name: "c", unhealthy: true}},
			want: "adding a server would risk etcd quorum: 1 of 3 servers are healthy"},
		{name: "a server still provisioning", servers: []remServer{{name: "a", ready: true}, {name: "b"}},
			want: "waiting for the node of Machine b to be Ready"},
		{name: "the remediated server still deleting", servers: []remServer{
			{name: "a", ready: true}, {name: "b", ready: true}, {name: "c", unhealthy: true, deleting: true}},
			want: "waiting for Machine c to be deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			machines, nodes := observe(t, tt.servers)
			got := replacementPreflight(machines, nodes, false)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("replacementPreflight = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRemediationForCarriesTheInProgressData(t *testing.T) {
	kcp := &controlplanev1.KThreesControlPlane{}
	if _, _, ok := remediationFor(kcp); ok {
		t.Fatal("remediationFor without a remediation in progress says one is due")
	}
	data := remediationData{Machine: "m1", Timestamp: ago(0), RetryCount: 2}
	v, err := data.marshal()
	if err != nil {
		t.Fatal(err)
	}
	kcp.Annotations = map[string]string{remediationInProgressAnnotation: v}
	key, value, ok := remediationFor(kcp)
	if !ok || key != remediationForAnnotation || value != v {
		t.Fatalf("remediationFor = %q, %q, %v; want %q, %q, true", key, value, ok, remediationForAnnotation, v)
	}
	got, err := parseRemediationData(value)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Timestamp.Equal(&data.Timestamp) || got.Machine != data.Machine || got.RetryCount != data.RetryCount {
		t.Errorf("round trip = %+v, want %+v", *got, data)
	}
	// KCP's format, so that tools reading KCP's annotation read this one.
	if want := `{"machine":"m1","timestamp":"2025-03-01T12:00:00Z","retryCount":2}`; v != want {
		t.Errorf("annotation value = %s, want %s", v, want)
	}
}

// reconcileRemediation against the apiserver: an unhealthy server of three is deleted
// and the remediation recorded on the control plane; with two unhealthy servers of
// three nothing is touched.
func TestReconcileRemediationDeletesAnUnhealthyServer(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		unhealthy []string
	}{
		{name: "remediated", unhealthy: []string{"s2"}},
		{name: "refused", unhealthy: []string{"s2", "s3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.NewNamespace(t)
			cluster, kcp, nodes := threeServerControlPlane(t, ns)
			for _, name := range tc.unhealthy {
				m := &clusterv1.Machine{}
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m); err != nil {
					t.Fatal(err)
				}
				markUnhealthy(m)
				if err := env.Client.Status().Update(ctx, m); err != nil {
					t.Fatal(err)
				}
				delete(nodes, name)
			}

			r := &Reconciler{Client: env.Client}
			machines, err := r.controlPlaneMachines(ctx, cluster, kcp)
			if err != nil {
				t.Fatal(err)
			}
			if machines.Len() != 3 {
				t.Fatalf("control plane machines = %v, want 3", machines.Names())
			}
			kcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
			seen := &observed{machines: machines, nodes: nodes}

			// As Reconcile does: the control plane is patched after the pass.
			patchHelper, err := patch.NewHelper(kcp, env.Client)
			if err != nil {
				t.Fatal(err)
			}
			done, result, err := r.reconcileRemediation(ctx, cluster, kcp, seen)
			if err != nil {
				t.Fatal(err)
			}
			if err := patchHelper.Patch(ctx, kcp); err != nil {
				t.Fatal(err)
			}
			if result.RequeueAfter != 0 {
				t.Errorf("RequeueAfter = %s, want none", result.RequeueAfter)
			}

			got := &controlplanev1.KThreesControlPlane{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kcp), got); err != nil {
				t.Fatal(err)
			}
			cond := conditions.Get(got, remediatingCondition)
			s2 := &clusterv1.Machine{}
			s2Err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s2"}, s2)
			s2Deleted := apierrors.IsNotFound(s2Err) || (s2Err == nil && !s2.DeletionTimestamp.IsZero())

			if tc.name == "refused" {
				if done || s2Deleted || s2Err != nil {
					t.Errorf("refused remediation: done = %v, s2 deleted = %v (%v)", done, s2Deleted, s2Err)
				}
				if _, ok := got.Annotations[remediationInProgressAnnotation]; ok || got.Status.LastRemediation != nil {
					t.Errorf("refused remediation recorded one: annotations %v, lastRemediation %+v", got.Annotations, got.Status.LastRemediation)
				}
				if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != remediationWouldLoseQuorumReason {
					t.Errorf("Remediating = %+v, want False/%s", cond, remediationWouldLoseQuorumReason)
				}
				return
			}

			if !done || !s2Deleted {
				t.Fatalf("done = %v, s2 deleted = %v (%v); want both", done, s2Deleted, s2Err)
			}
			for _, name := range []string{"s1", "s3"} {
				m := &clusterv1.Machine{}
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m); err != nil || !m.DeletionTimestamp.IsZero() {
					t.Errorf("healthy server %s was touched (err %v)", name, err)
				}
			}
			lr := got.Status.LastRemediation
			if lr == nil || lr.Machine != "s2" || lr.RetryCount != 0 || time.Since(lr.Time.Time) > time.Minute {
				t.Errorf("status.lastRemediation = %+v, want s2, retry 0, now", lr)
			}
			data, err := parseRemediationData(got.Annotations[remediationInProgressAnnotation])
			if err != nil || data.Machine != "s2" || data.RetryCount != 0 {
				t.Errorf("in-progress annotation = %q (%v), want machine s2, retry 0", got.Annotations[remediationInProgressAnnotation], err)
			}
			if cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "s2") {
				t.Errorf("Remediating = %+v, want True naming s2", cond)
			}
			if _, value, ok := remediationFor(got); !ok || value != got.Annotations[remediationInProgressAnnotation] {
				t.Errorf("remediationFor after remediating = %q, %v; want the in-progress data", value, ok)
			}
		})
	}
}

// A retry inside retryPeriod holds scaling back and asks to be woken when the period
// ends: no watch would report that.
// A mark older than its server's recovery does not hold scaling, but asks to be woken
// when its grace ends: no watch would, since the health check leaves a mark it keeps
// unchanged.
func TestReconcileRemediationAsksToLookAgainAfterAStaleMark(t *testing.T) {
	kcp := remediationKCP(true, 3, nil)
	seen := &observed{}
	seen.machines, seen.nodes = observe(t, []remServer{{name: "a", ready: true}, {name: "c", ready: true},
		{name: "b", unhealthy: true, ready: true, markedAgo: time.Hour, readyAgo: time.Minute}})
	now := time.Now()
	for _, m := range seen.machines {
		if c := conditions.Get(m, clusterv1.MachineHealthCheckSucceededCondition); c != nil {
			c.LastTransitionTime = metav1.NewTime(now.Add(-time.Hour))
			conditions.Set(m, *c)
		}
	}
	seen.nodes["b"].Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-time.Minute))

	done, result, err := (&Reconciler{}).reconcileRemediation(context.Background(), nil, kcp, seen)
	if err != nil {
		t.Fatal(err)
	}
	if done || result.RequeueAfter <= 50*time.Second || result.RequeueAfter > healthCheckRecheckGrace-time.Minute {
		t.Errorf("done, RequeueAfter = %v, %s; want false, about 1m", done, result.RequeueAfter)
	}
	if c := conditions.Get(kcp, remediatingCondition); c == nil || c.Reason != remediationWaitingForHealthCheckReason {
		t.Errorf("Remediating = %+v, want reason %s", c, remediationWaitingForHealthCheckReason)
	}
}

func TestReconcileRemediationWaitsForRetryPeriod(t *testing.T) {
	kcp := remediationKCP(true, 3, &controlplanev1.RemediationStrategy{RetryPeriod: metav1.Duration{Duration: 10 * time.Minute}})
	seen := &observed{}
	seen.machines, seen.nodes = observe(t, []remServer{{name: "a", ready: true}, {name: "c", ready: true}})
	b := remServer{name: "b", unhealthy: true}.machine(t)
	last, err := remediationData{Machine: "old", Timestamp: metav1.NewTime(time.Now().Add(-time.Minute)), RetryCount: 1}.marshal()
	if err != nil {
		t.Fatal(err)
	}
	b.Annotations = map[string]string{remediationForAnnotation: last}
	seen.machines.Insert(b)

	done, result, err := (&Reconciler{}).reconcileRemediation(context.Background(), nil, kcp, seen)
	if err != nil {
		t.Fatal(err)
	}
	if !done || result.RequeueAfter <= 8*time.Minute || result.RequeueAfter > 9*time.Minute {
		t.Errorf("done, RequeueAfter = %v, %s; want true, about 9m", done, result.RequeueAfter)
	}
	c := conditions.Get(kcp, remediatingCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != remediationWaitingForRetryPeriodReason {
		t.Errorf("Remediating = %+v, want False/%s", c, remediationWaitingForRetryPeriodReason)
	}
	if _, ok := kcp.Annotations[remediationInProgressAnnotation]; ok || kcp.Status.LastRemediation != nil {
		t.Error("a remediation that waits recorded one")
	}
}

// threeServerControlPlane creates a paused control plane of three servers s1..s3 (so
// that a manager running in the package leaves it to direct calls), with their Ready
// Nodes as a pass would see them.
func threeServerControlPlane(t *testing.T, ns string) (*clusterv1.Cluster, *controlplanev1.KThreesControlPlane, workload.Nodes) {
	t.Helper()
	ctx := context.Background()
	cluster, kcp := newClusterWithControlPlane(t, ns, true)
	kcp.Spec.Replicas = ptr.To[int32](3)
	if err := env.Client.Update(ctx, kcp); err != nil {
		t.Fatal(err)
	}
	nodes := workload.Nodes{}
	for _, name := range []string{"s1", "s2", "s3"} {
		m := desiredMachine(kcp, cluster, name, "", clusterv1.ContractVersionedObjectReference{
			APIGroup: builder.BootstrapGroupVersion.Group, Kind: builder.GenericBootstrapConfigKind, Name: name,
		}, clusterv1.ContractVersionedObjectReference{
			APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineKind, Name: name,
		})
		if err := env.Client.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		nodes[name] = readyNode(name)
	}
	return cluster, kcp, nodes
}
