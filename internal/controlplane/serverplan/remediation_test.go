package serverplan

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"

	"github.com/capk3s/capk3s/test/cpfixtures"
)

func TestDecideRemediation(t *testing.T) {
	healthy := func(name string, age time.Duration) cpfixtures.Server {
		return cpfixtures.Server{Name: name, Age: age, Ready: true}
	}
	sick := func(name string, age time.Duration) cpfixtures.Server {
		return cpfixtures.Server{Name: name, Age: age, Unhealthy: true}
	}
	retryOf := func(s cpfixtures.Server, count int32, at time.Duration) cpfixtures.Server {
		s.RemediationFor = remediationFor(t, RemediationData{Machine: "old", Timestamp: cpfixtures.Ago(at), RetryCount: count})
		return s
	}
	strategy := func(maxRetry *int32, retryPeriod time.Duration, minHealthy *time.Duration) *controlplanev1.RemediationStrategy {
		rs := &controlplanev1.RemediationStrategy{MaxRetry: maxRetry, RetryPeriod: metav1.Duration{Duration: retryPeriod}}
		if minHealthy != nil {
			rs.MinHealthyPeriod = &metav1.Duration{Duration: *minHealthy}
		}
		return rs
	}
	restarting := func(s cpfixtures.Server, annotation, value string) cpfixtures.Server {
		s.Annotations = map[string]string{annotation: value}
		return s
	}
	inProgress := func(machine string) map[string]string {
		v, _ := RemediationData{Machine: machine, Timestamp: cpfixtures.Ago(time.Minute)}.Marshal()
		return map[string]string{RemediationInProgressAnnotation: v}
	}

	tests := []struct {
		name        string
		kcp         *controlplanev1.KThreesControlPlane
		annotations map[string]string
		servers     []cpfixtures.Server
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
			kcp:        cpfixtures.RemediationKCP(true, 3, nil),
			servers:    []cpfixtures.Server{healthy("a", 3*time.Hour), healthy("b", 2*time.Hour), healthy("c", time.Hour)},
			wantReason: NotRemediatingReason,
		},
		{
			name:       "3 servers, 1 unhealthy: quorum holds, remediated",
			kcp:        cpfixtures.RemediationKCP(true, 3, nil),
			servers:    []cpfixtures.Server{healthy("a", 3*time.Hour), sick("b", 2*time.Hour), healthy("c", time.Hour)},
			wantVictim: "b", wantReason: RemediatingReason, wantMessage: "Deleting unhealthy Machine b",
		},
		{
			name:       "3 servers, 2 unhealthy: would lose quorum",
			kcp:        cpfixtures.RemediationKCP(true, 3, nil),
			servers:    []cpfixtures.Server{healthy("a", 3*time.Hour), sick("b", 2*time.Hour), sick("c", time.Hour)},
			wantReason: RemediationWouldLoseQuorumReason, wantMessage: "would lose etcd quorum: 2 servers would remain, 1 of them healthy, and quorum needs 2",
		},
		{
			name: "3 servers, 1 unhealthy, 1 Ready whose etcd member k3s removed: would lose quorum",
			kcp:  cpfixtures.RemediationKCP(true, 3, nil),
			servers: []cpfixtures.Server{healthy("a", 3*time.Hour), sick("b", 2*time.Hour),
				{Name: "c", Age: time.Hour, Ready: true, MemberRemoved: true}},
			wantReason: RemediationWouldLoseQuorumReason, wantMessage: "2 servers would remain, 1 of them healthy, and quorum needs 2",
		},
		// A server whose k3s is being restarted keeps a Ready Node for a while (until
		// its kubelet's status goes stale), but its etcd member is down meanwhile.
		{
			name: "3 servers, 1 unhealthy, 1 Ready being updated in place: would lose quorum",
			kcp:  cpfixtures.RemediationKCP(true, 3, nil),
			servers: []cpfixtures.Server{healthy("a", 3*time.Hour), sick("b", 2*time.Hour),
				restarting(healthy("c", time.Hour), clusterv1.UpdateInProgressAnnotation, "")},
			wantReason: RemediationWouldLoseQuorumReason, wantMessage: "2 servers would remain, 1 of them healthy, and quorum needs 2; c is updated in place",
		},
		{
			name: "3 servers, 1 unhealthy, 1 Ready whose UpdateMachine hook is pending: would lose quorum",
			kcp:  cpfixtures.RemediationKCP(true, 3, nil),
			servers: []cpfixtures.Server{healthy("a", 3*time.Hour), sick("b", 2*time.Hour),
				restarting(healthy("c", time.Hour), runtimev1.PendingHooksAnnotation, "UpdateMachine")},
			wantReason: RemediationWouldLoseQuorumReason, wantMessage: "1 of them healthy",
		},
		{
			name: "3 servers, 1 unhealthy, 1 Ready restarting k3s to renew its certificates: would lose quorum",
			kcp:  cpfixtures.RemediationKCP(true, 3, nil),
			servers: []cpfixtures.Server{healthy("a", 3*time.Hour), sick("b", 2*time.Hour),
				restarting(healthy("c", time.Hour), controlplanev1.CertificatesRenewingAnnotation, "2025-03-20T00:00:00Z")},
			wantReason: RemediationWouldLoseQuorumReason, wantMessage: "c restarts k3s to renew its certificates",
		},
		{
			name: "5 servers, 1 unhealthy, 1 restarting: 3 of 4 keep quorum, remediated",
			kcp:  cpfixtures.RemediationKCP(true, 5, nil),
			servers: []cpfixtures.Server{healthy("a", 5*time.Hour), sick("b", 4*time.Hour), healthy("c", 3*time.Hour),
				restarting(healthy("d", 2*time.Hour), controlplanev1.CertificatesRenewingAnnotation, "2025-03-20T00:00:00Z"), healthy("e", time.Hour)},
			wantVictim: "b", wantReason: RemediatingReason,
		},
		{
			name: "another pending hook is no restart",
			kcp:  cpfixtures.RemediationKCP(true, 3, nil),
			servers: []cpfixtures.Server{healthy("a", 3*time.Hour), sick("b", 2*time.Hour),
				restarting(healthy("c", time.Hour), runtimev1.PendingHooksAnnotation, "AfterClusterUpgrade")},
			wantVictim: "b", wantReason: RemediatingReason,
		},
		{
			name: "5 servers, 2 unhealthy: the oldest is remediated",
			kcp:  cpfixtures.RemediationKCP(true, 5, nil),
			servers: []cpfixtures.Server{healthy("a", 5*time.Hour), sick("b", 2*time.Hour), healthy("c", 3*time.Hour),
				sick("d", 4*time.Hour), healthy("e", time.Hour)},
			wantVictim: "d", wantReason: RemediatingReason,
		},
		{
			name: "an unhealthy server without a Ready node goes before an older one with",
			kcp:  cpfixtures.RemediationKCP(true, 5, nil),
			servers: []cpfixtures.Server{healthy("a", 5*time.Hour), {Name: "b", Age: 4 * time.Hour, Unhealthy: true, Ready: true},
				sick("c", 2*time.Hour), healthy("d", 3*time.Hour), healthy("e", time.Hour)},
			wantVictim: "c", wantReason: RemediatingReason,
		},
		{
			name:       "2 servers, 1 unhealthy: the other alone keeps quorum",
			kcp:        cpfixtures.RemediationKCP(true, 2, nil),
			servers:    []cpfixtures.Server{healthy("a", 2*time.Hour), sick("b", time.Hour)},
			wantVictim: "b", wantReason: RemediatingReason,
		},
		{
			name:       "the only server of an initialized cluster is kept",
			kcp:        cpfixtures.RemediationKCP(true, 1, nil),
			servers:    []cpfixtures.Server{sick("a", time.Hour)},
			wantReason: RemediationWouldLoseQuorumReason, wantMessage: "0 servers would remain",
		},
		{
			name:       "the first server before initialization is remediated",
			kcp:        cpfixtures.RemediationKCP(false, 3, nil),
			servers:    []cpfixtures.Server{sick("a", time.Hour)},
			noNodes:    true,
			wantVictim: "a", wantReason: RemediatingReason,
		},
		{
			name: "a server whose node became Ready after it was marked waits for the health check to look again",
			kcp:  cpfixtures.RemediationKCP(true, 3, nil),
			servers: []cpfixtures.Server{healthy("a", 3*time.Hour),
				{Name: "b", Age: 2 * time.Hour, Unhealthy: true, Ready: true, MarkedAgo: 2 * time.Minute, ReadyAgo: 30 * time.Second},
				healthy("c", time.Hour)},
			wantReason:  RemediationWaitingForHealthCheckReason,
			wantMessage: "its node became Ready at 2025-03-01T11:59:30Z, after the MachineHealthCheck marked it unhealthy at 2025-03-01T11:58:00Z; waiting until 2025-03-01T12:01:30Z",
			wantRecheck: HealthCheckRecheckGrace - 30*time.Second,
		},
		{
			name: "a node Ready time ahead of this clock holds nothing",
			kcp:  cpfixtures.RemediationKCP(true, 3, nil),
			servers: []cpfixtures.Server{healthy("a", 3*time.Hour),
				{Name: "b", Age: 2 * time.Hour, Unhealthy: true, Ready: true, MarkedAgo: 2 * time.Minute, ReadyAgo: -time.Hour},
				healthy("c", time.Hour)},
			wantVictim: "b", wantReason: RemediatingReason,
		},
		{
			name: "a stale mark is passed over for a current one",
			kcp:  cpfixtures.RemediationKCP(true, 5, nil),
			servers: []cpfixtures.Server{healthy("a", 5*time.Hour),
				{Name: "b", Age: 4 * time.Hour, Unhealthy: true, Ready: true, MarkedAgo: 2 * time.Minute, ReadyAgo: 30 * time.Second},
				sick("c", 2*time.Hour), healthy("d", 3*time.Hour), healthy("e", time.Hour)},
			wantVictim: "c", wantReason: RemediatingReason,
		},
		{
			name: "a node Ready since before the mark does not make it stale",
			kcp:  cpfixtures.RemediationKCP(true, 3, nil),
			servers: []cpfixtures.Server{healthy("a", 3*time.Hour),
				{Name: "b", Age: 2 * time.Hour, Unhealthy: true, Ready: true, MarkedAgo: time.Minute, ReadyAgo: time.Hour},
				healthy("c", time.Hour)},
			wantVictim: "b", wantReason: RemediatingReason,
		},
		{
			name: "a mark the health check kept long after the node became Ready is trusted",
			kcp:  cpfixtures.RemediationKCP(true, 3, nil),
			servers: []cpfixtures.Server{healthy("a", 3*time.Hour),
				{Name: "b", Age: 2 * time.Hour, Unhealthy: true, Ready: true, MarkedAgo: time.Hour, ReadyAgo: HealthCheckRecheckGrace},
				healthy("c", time.Hour)},
			wantVictim: "b", wantReason: RemediatingReason,
		},
		{
			name:       "another machine is being deleted",
			kcp:        cpfixtures.RemediationKCP(true, 3, nil),
			servers:    []cpfixtures.Server{healthy("a", 3*time.Hour), sick("b", 2*time.Hour), {Name: "c", Age: time.Hour, Ready: true, Deleting: true}},
			wantReason: RemediationWaitingForDeletionReason, wantMessage: "another machine is being deleted (c)",
		},
		{
			name:       "another machine is being deleted, before initialization too",
			kcp:        cpfixtures.RemediationKCP(false, 1, nil),
			servers:    []cpfixtures.Server{sick("a", time.Hour), {Name: "b", Age: 2 * time.Hour, Deleting: true}},
			wantReason: RemediationWaitingForDeletionReason,
		},
		{
			name:       "another server is still provisioning",
			kcp:        cpfixtures.RemediationKCP(true, 3, nil),
			servers:    []cpfixtures.Server{healthy("a", 3*time.Hour), sick("b", 2*time.Hour), {Name: "c", Age: time.Minute}},
			wantReason: RemediationWaitingForProvisioningReason, wantMessage: "waiting for the node of Machine c to be Ready",
		},
		{
			name:       "the workload cluster's nodes cannot be read",
			kcp:        cpfixtures.RemediationKCP(true, 3, nil),
			servers:    []cpfixtures.Server{healthy("a", 3*time.Hour), sick("b", 2*time.Hour), healthy("c", time.Hour)},
			noNodes:    true,
			wantReason: RemediationNodesUnknownReason,
		},
		{
			name:       "a failed replacement is retried, counting the retry",
			kcp:        cpfixtures.RemediationKCP(true, 3, strategy(ptr.To[int32](3), 5*time.Minute, nil)),
			servers:    []cpfixtures.Server{healthy("a", 3*time.Hour), retryOf(sick("b", 10*time.Minute), 1, 10*time.Minute), healthy("c", time.Hour)},
			wantVictim: "b", wantRetryCount: 2, wantReason: RemediatingReason, wantMessage: "(retry 2)",
		},
		{
			name:       "maxRetry reached",
			kcp:        cpfixtures.RemediationKCP(true, 3, strategy(ptr.To[int32](3), 0, nil)),
			servers:    []cpfixtures.Server{healthy("a", 3*time.Hour), retryOf(sick("b", 10*time.Minute), 3, 10*time.Minute), healthy("c", time.Hour)},
			wantReason: RemediationMaxRetryReachedReason, wantMessage: "maxRetry 3 reached",
		},
		{
			name:       "maxRetry 0 allows no retry",
			kcp:        cpfixtures.RemediationKCP(true, 3, strategy(ptr.To[int32](0), 0, nil)),
			servers:    []cpfixtures.Server{healthy("a", 3*time.Hour), retryOf(sick("b", 10*time.Minute), 0, 10*time.Minute), healthy("c", time.Hour)},
			wantReason: RemediationMaxRetryReachedReason, wantMessage: "maxRetry 0 reached",
		},
		{
			name:       "maxRetry 0 still allows a first remediation",
			kcp:        cpfixtures.RemediationKCP(true, 3, strategy(ptr.To[int32](0), 0, nil)),
			servers:    []cpfixtures.Server{healthy("a", 3*time.Hour), sick("b", 2*time.Hour), healthy("c", time.Hour)},
			wantVictim: "b", wantReason: RemediatingReason,
		},
		{
			name:       "retryPeriod not elapsed: wait for the rest of it",
			kcp:        cpfixtures.RemediationKCP(true, 3, strategy(nil, 5*time.Minute, nil)),
			servers:    []cpfixtures.Server{healthy("a", 3*time.Hour), retryOf(sick("b", time.Minute), 1, time.Minute), healthy("c", time.Hour)},
			wantReason: RemediationWaitingForRetryPeriodReason, wantMessage: "waiting for retryPeriod 5m0s", wantWait: 4 * time.Minute,
		},
		{
			name:       "maxRetry is reported before a retryPeriod wait that would end in it",
			kcp:        cpfixtures.RemediationKCP(true, 3, strategy(ptr.To[int32](1), 5*time.Minute, nil)),
			servers:    []cpfixtures.Server{healthy("a", 3*time.Hour), retryOf(sick("b", time.Minute), 1, time.Minute), healthy("c", time.Hour)},
			wantReason: RemediationMaxRetryReachedReason,
		},
		{
			name:       "minHealthyPeriod (default 1h) elapsed: a new failure, the counter resets",
			kcp:        cpfixtures.RemediationKCP(true, 3, strategy(ptr.To[int32](3), 5*time.Minute, nil)),
			servers:    []cpfixtures.Server{healthy("a", 3*time.Hour), retryOf(sick("b", 2*time.Hour), 7, 2*time.Hour), healthy("c", time.Hour)},
			wantVictim: "b", wantRetryCount: 0, wantReason: RemediatingReason,
		},
		{
			name: "a custom minHealthyPeriod elapsed: the counter resets",
			kcp:  cpfixtures.RemediationKCP(true, 3, strategy(ptr.To[int32](3), 0, ptr.To(10*time.Minute))),
			servers: []cpfixtures.Server{healthy("a", 3*time.Hour), retryOf(sick("b", 20*time.Minute), 3, 20*time.Minute),
				healthy("c", time.Hour)},
			wantVictim: "b", wantRetryCount: 0, wantReason: RemediatingReason,
		},
		{
			name:       "within a custom minHealthyPeriod it is a retry",
			kcp:        cpfixtures.RemediationKCP(true, 3, strategy(ptr.To[int32](3), 0, ptr.To(10*time.Minute))),
			servers:    []cpfixtures.Server{healthy("a", 3*time.Hour), retryOf(sick("b", 5*time.Minute), 3, 5*time.Minute), healthy("c", time.Hour)},
			wantReason: RemediationMaxRetryReachedReason,
		},
		{
			name: "an unreadable remediation-for annotation counts as a first failure",
			kcp:  cpfixtures.RemediationKCP(true, 3, strategy(ptr.To[int32](0), 0, nil)),
			servers: []cpfixtures.Server{healthy("a", 3*time.Hour),
				{Name: "b", Age: 2 * time.Hour, Unhealthy: true, RemediationFor: "not json"}, healthy("c", time.Hour)},
			wantVictim: "b", wantReason: RemediatingReason,
		},
		{
			name:           "a remediation in progress waits for its machine to go",
			kcp:            cpfixtures.RemediationKCP(true, 3, nil),
			annotations:    inProgress("b"),
			servers:        []cpfixtures.Server{healthy("a", 3*time.Hour), {Name: "b", Age: 2 * time.Hour, Unhealthy: true, Deleting: true}, sick("c", time.Hour)},
			wantInProgress: true, wantReason: RemediatingReason, wantMessage: "Deleting unhealthy Machine b; its replacement is created once it is gone",
		},
		{
			name:           "a remediation in progress waits for its replacement",
			kcp:            cpfixtures.RemediationKCP(true, 3, nil),
			annotations:    inProgress("b"),
			servers:        []cpfixtures.Server{healthy("a", 3*time.Hour), healthy("c", time.Hour)},
			wantInProgress: true, wantReason: RemediatingReason, wantMessage: "Creating a replacement for unhealthy Machine b",
		},
		{
			name:        "an in-progress annotation whose replacement exists is dropped",
			kcp:         cpfixtures.RemediationKCP(true, 4, nil),
			annotations: inProgress("b"),
			servers: []cpfixtures.Server{healthy("a", 3*time.Hour), healthy("c", time.Hour),
				{Name: "d", Age: time.Minute, Ready: true, RemediationFor: remediationFor(t, RemediationData{Machine: "b", Timestamp: cpfixtures.Ago(time.Minute)})}},
			wantDropStale: true, wantReason: NotRemediatingReason,
		},
		{
			name:          "an in-progress annotation is dropped when replicas were lowered, and the next remediation proceeds",
			kcp:           cpfixtures.RemediationKCP(true, 3, nil),
			annotations:   inProgress("x"),
			servers:       []cpfixtures.Server{healthy("a", 3*time.Hour), sick("b", 2*time.Hour), healthy("c", time.Hour)},
			wantDropStale: true, wantVictim: "b", wantReason: RemediatingReason,
		},
		{
			name:          "an unreadable in-progress annotation is dropped",
			kcp:           cpfixtures.RemediationKCP(true, 3, nil),
			annotations:   map[string]string{RemediationInProgressAnnotation: "{"},
			servers:       []cpfixtures.Server{healthy("a", 3*time.Hour), healthy("c", time.Hour)},
			wantDropStale: true, wantReason: NotRemediatingReason,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.kcp.Annotations = tt.annotations
			machines, nodes := cpfixtures.Observe(tt.servers)
			if tt.noNodes {
				nodes = nil
			}

			d := DecideRemediation(tt.kcp, machines, nodes, cpfixtures.RemediationNow)

			gotVictim := ""
			if d.Victim != nil {
				gotVictim = d.Victim.Name
			}
			if gotVictim != tt.wantVictim {
				t.Errorf("victim = %q, want %q (reason %s: %s)", gotVictim, tt.wantVictim, d.Reason, d.Message)
			}
			if d.Reason != tt.wantReason {
				t.Errorf("reason = %q, want %q (message %q)", d.Reason, tt.wantReason, d.Message)
			}
			if !strings.Contains(d.Message, tt.wantMessage) {
				t.Errorf("message = %q, want it to contain %q", d.Message, tt.wantMessage)
			}
			if d.Wait != tt.wantWait {
				t.Errorf("wait = %s, want %s", d.Wait, tt.wantWait)
			}
			if d.Recheck != tt.wantRecheck {
				t.Errorf("recheck = %s, want %s", d.Recheck, tt.wantRecheck)
			}
			if d.InProgress != tt.wantInProgress || d.DropStaleInProgress != tt.wantDropStale {
				t.Errorf("inProgress, dropStale = %v, %v; want %v, %v", d.InProgress, d.DropStaleInProgress, tt.wantInProgress, tt.wantDropStale)
			}
			if d.Victim != nil {
				want := RemediationData{Machine: tt.wantVictim, Timestamp: metav1.NewTime(cpfixtures.RemediationNow), RetryCount: tt.wantRetryCount}
				if d.Data != want {
					t.Errorf("remediation data = %+v, want %+v", d.Data, want)
				}
			}
		})
	}
}

func TestReplacementPreflightRemediating(t *testing.T) {
	tests := []struct {
		name    string
		servers []cpfixtures.Server
		want    string // a substring; "" for allowed
	}{
		{name: "no server left (first server remediated)", servers: nil},
		{name: "one server left", servers: []cpfixtures.Server{{Name: "a", Ready: true}}},
		{name: "two healthy servers left of three", servers: []cpfixtures.Server{{Name: "a", Ready: true}, {Name: "b", Ready: true}}},
		{name: "four left of five, one of them unhealthy", servers: []cpfixtures.Server{
			{Name: "a", Ready: true}, {Name: "b", Ready: true}, {Name: "c", Ready: true}, {Name: "d", Unhealthy: true}}},
		{name: "quorum at risk with the new member", servers: []cpfixtures.Server{
			{Name: "a", Ready: true}, {Name: "b", Unhealthy: true}, {Name: "c", Unhealthy: true}},
			want: "adding a server would risk etcd quorum: 1 of 3 servers are healthy"},
		{name: "quorum at risk with the new member while one restarts", servers: []cpfixtures.Server{
			{Name: "a", Ready: true}, {Name: "b", Ready: true, Annotations: map[string]string{controlplanev1.CertificatesRenewingAnnotation: "2025-03-20T00:00:00Z"}}},
			want: "adding a server would risk etcd quorum: 1 of 2 servers are healthy"},
		{name: "a server still provisioning", servers: []cpfixtures.Server{{Name: "a", Ready: true}, {Name: "b"}},
			want: "waiting for the node of Machine b to be Ready"},
		{name: "the remediated server still deleting", servers: []cpfixtures.Server{
			{Name: "a", Ready: true}, {Name: "b", Ready: true}, {Name: "c", Unhealthy: true, Deleting: true}},
			want: "waiting for Machine c to be deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			machines, nodes := cpfixtures.Observe(tt.servers)
			got := ReplacementPreflight(machines, nodes, false)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("ReplacementPreflight = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRemediationForCarriesTheInProgressData(t *testing.T) {
	kcp := &controlplanev1.KThreesControlPlane{}
	if _, _, ok := RemediationFor(kcp); ok {
		t.Fatal("RemediationFor without a remediation in progress says one is due")
	}
	data := RemediationData{Machine: "m1", Timestamp: cpfixtures.Ago(0), RetryCount: 2}
	v, err := data.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	kcp.Annotations = map[string]string{RemediationInProgressAnnotation: v}
	key, value, ok := RemediationFor(kcp)
	if !ok || key != RemediationForAnnotation || value != v {
		t.Fatalf("RemediationFor = %q, %q, %v; want %q, %q, true", key, value, ok, RemediationForAnnotation, v)
	}
	got, err := ParseRemediationData(value)
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

// 3 servers, 2 unhealthy: embedded etcd refuses to remediate (1 healthy of 2 left, no
// quorum); on an external datastore the data is safe and the server is replaced.
func TestRemediationOnDatastoreHasNoQuorumRule(t *testing.T) {
	servers := []cpfixtures.Server{
		{Name: "a", Age: 3 * time.Hour, Unhealthy: true},
		{Name: "b", Age: 2 * time.Hour, Unhealthy: true, Ready: true},
		{Name: "c", Age: time.Hour, Ready: true},
	}
	machines, nodes := cpfixtures.Observe(servers)
	if d := DecideRemediation(cpfixtures.RemediationKCP(true, 3, nil), machines, nodes, cpfixtures.RemediationNow); d.Reason != RemediationWouldLoseQuorumReason {
		t.Fatalf("embedded etcd: reason %q, want %q", d.Reason, RemediationWouldLoseQuorumReason)
	}
	d := DecideRemediation(cpfixtures.OnDatastore(cpfixtures.RemediationKCP(true, 3, nil)), machines, nodes, cpfixtures.RemediationNow)
	if d.Victim == nil || d.Victim.Name != "a" || d.Reason != RemediatingReason {
		t.Errorf("datastore: victim %v, reason %q (%s); want a remediated", d.Victim, d.Reason, d.Message)
	}
	if got := ReplacementPreflight(machines, nodes, true); got != "" {
		t.Errorf("ReplacementPreflight on a datastore = %q, want no quorum block", got)
	}
}

// remediationFor is d as the remediation-for annotation of a replacement server.
func remediationFor(t *testing.T, d RemediationData) string {
	t.Helper()
	v, err := d.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The fixtures write a replacement's remediation-for annotation under their own copy
// of its name (they cannot import this package); it must be the one read here.
func TestFixturesWriteTheRemediationForAnnotation(t *testing.T) {
	if cpfixtures.RemediationForAnnotation != RemediationForAnnotation {
		t.Errorf("cpfixtures writes %q, serverplan reads %q", cpfixtures.RemediationForAnnotation, RemediationForAnnotation)
	}
}
