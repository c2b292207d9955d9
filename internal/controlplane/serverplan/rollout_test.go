package serverplan

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"

	"github.com/capk3s/capk3s/test/cpfixtures"
)

func TestUpToDateReason(t *testing.T) {
	kcp := cpfixtures.DecisionKCP(3, nil)
	sameConfig := &bootstrapv1.KThreesConfig{Spec: *kcp.Spec.KThreesConfigSpec.DeepCopy()}
	sameConfig.Spec.Version = "v1.31.4+k3s1" // set by defaulting on some configs; never compared
	otherConfig := &bootstrapv1.KThreesConfig{Spec: bootstrapv1.KThreesConfigSpec{ServerConfig: bootstrapv1.KThreesServerConfig{DisableComponents: []string{"servicelb"}}}}
	// cluster-api-k3s's etcd proxy image is ignored, so it differing is no reason to roll out.
	withEtcdProxyImage := cpfixtures.DecisionKCP(3, nil)
	withEtcdProxyImage.Spec.KThreesConfigSpec.ServerConfig.DeprecatedEtcdProxyImage = "registry.example.com/socat:1" //nolint:staticcheck // the ignored field is what is tested
	// extraConfig is part of the spec compared: a changed option rolls servers out,
	// the same map written anew (other byte slices) does not.
	withExtra := cpfixtures.DecisionKCP(3, nil)
	withExtra.Spec.KThreesConfigSpec.ServerConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"flannel-backend": {Raw: []byte(`"vxlan"`)}}
	configWithExtra := func(value string) *bootstrapv1.KThreesConfig {
		c := &bootstrapv1.KThreesConfig{Spec: *withExtra.Spec.KThreesConfigSpec.DeepCopy()}
		c.Spec.ServerConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"flannel-backend": {Raw: []byte(value)}}
		return c
	}
	// An empty map and none render the same config.yaml, and are the same spec.
	withEmptyExtra := cpfixtures.DecisionKCP(3, nil)
	withEmptyExtra.Spec.KThreesConfigSpec.AgentConfig.ExtraConfig = map[string]apiextensionsv1.JSON{}
	withRolloutAfter := cpfixtures.DecisionKCP(3, nil)
	withRolloutAfter.Spec.RolloutAfter = ptr.To(metav1.NewTime(cpfixtures.T0.Add(-time.Hour)))
	future := cpfixtures.DecisionKCP(3, nil)
	future.Spec.RolloutAfter = ptr.To(metav1.NewTime(cpfixtures.T0.Add(time.Hour)))
	// The contract's spec.rollout.after, as a ClusterClass topology sets it.
	withRolloutDotAfter := cpfixtures.DecisionKCP(3, nil)
	withRolloutDotAfter.Spec.Rollout.After = metav1.NewTime(cpfixtures.T0.Add(-time.Hour))
	// Both: each deadline that has passed applies.
	withBoth := cpfixtures.DecisionKCP(3, nil)
	withBoth.Spec.RolloutAfter = ptr.To(metav1.NewTime(cpfixtures.T0.Add(-3 * time.Hour)))
	withBoth.Spec.Rollout.After = metav1.NewTime(cpfixtures.T0.Add(-time.Hour))

	// Taints are changed in place and names only apply to new servers: neither is
	// compared, so a server named otherwise and tainted otherwise is up to date.
	reshaped := cpfixtures.DecisionKCP(3, nil)
	reshaped.Spec.MachineNaming.Template = "{{ .cluster.name }}-renamed-{{ .random }}"
	reshaped.Spec.MachineTemplate.Spec.Taints = []clusterv1.MachineTaint{{Key: "example.com/new", Effect: "NoSchedule", Propagation: clusterv1.MachineTaintPropagationAlways}}
	oldShape := cpfixtures.DecisionMachine("cp-abcde", time.Hour)
	oldShape.Spec.Taints = []clusterv1.MachineTaint{{Key: "example.com/old", Effect: "NoExecute", Propagation: clusterv1.MachineTaintPropagationAlways}}

	cases := []struct {
		name string
		kcp  *controlplanev1.KThreesControlPlane
		m    *clusterv1.Machine
		objs ServerObjects
		want string // substring of the reason; "" means up to date
	}{
		{"other name and taints", reshaped, oldShape, ServerObjects{Config: sameConfig}, ""},
		{"same version without the v", kcp, cpfixtures.DecisionMachine("a", time.Hour), ServerObjects{Config: sameConfig}, ""},
		{"older version", kcp, cpfixtures.DecisionMachine("a", time.Hour, cpfixtures.WithVersion("v1.30.8+k3s1")), ServerObjects{}, "version v1.30.8+k3s1, want v1.31.4+k3s1"},
		{"another k3s release of the same Kubernetes version", kcp, cpfixtures.DecisionMachine("a", time.Hour, cpfixtures.WithVersion("v1.31.4+k3s2")), ServerObjects{}, "version v1.31.4+k3s2"},
		{"config spec changed", kcp, cpfixtures.DecisionMachine("a", time.Hour), ServerObjects{Config: otherConfig}, "kthreesConfigSpec changed"},
		{"same extraConfig", withExtra, cpfixtures.DecisionMachine("a", time.Hour), ServerObjects{Config: configWithExtra(`"vxlan"`)}, ""},
		{"extraConfig option changed", withExtra, cpfixtures.DecisionMachine("a", time.Hour), ServerObjects{Config: configWithExtra(`"wireguard-native"`)}, "kthreesConfigSpec changed"},
		{"extraConfig option added", withExtra, cpfixtures.DecisionMachine("a", time.Hour), ServerObjects{Config: sameConfig}, "kthreesConfigSpec changed"},
		{"empty extraConfig", withEmptyExtra, cpfixtures.DecisionMachine("a", time.Hour), ServerObjects{Config: sameConfig}, ""},
		{"only the ignored etcdProxyImage differs", withEtcdProxyImage, cpfixtures.DecisionMachine("a", time.Hour), ServerObjects{Config: sameConfig}, ""},
		{"cloned from the current template", kcp, cpfixtures.DecisionMachine("a", time.Hour), ServerObjects{Infra: cpfixtures.InfraClonedFrom("DockerMachineTemplate.infrastructure.cluster.x-k8s.io", "v2")}, ""},
		{"cloned from an older template", kcp, cpfixtures.DecisionMachine("a", time.Hour), ServerObjects{Infra: cpfixtures.InfraClonedFrom("DockerMachineTemplate.infrastructure.cluster.x-k8s.io", "v1")}, "infrastructure template DockerMachineTemplate.infrastructure.cluster.x-k8s.io/v1"},
		{"adopted, no cloned-from annotations", kcp, cpfixtures.DecisionMachine("a", time.Hour), ServerObjects{Infra: &unstructured.Unstructured{}}, ""},
		{"created before a past rolloutAfter", withRolloutAfter, cpfixtures.DecisionMachine("a", 2*time.Hour), ServerObjects{}, "created before rolloutAfter"},
		{"created after rolloutAfter", withRolloutAfter, cpfixtures.DecisionMachine("a", 30*time.Minute), ServerObjects{}, ""},
		{"rolloutAfter still ahead", future, cpfixtures.DecisionMachine("a", 2*time.Hour), ServerObjects{}, ""},
		{"created before a past rollout.after", withRolloutDotAfter, cpfixtures.DecisionMachine("a", 2*time.Hour), ServerObjects{}, "created before rolloutAfter"},
		{"created after rollout.after", withRolloutDotAfter, cpfixtures.DecisionMachine("a", 30*time.Minute), ServerObjects{}, ""},
		{"both set: the later one applies too", withBoth, cpfixtures.DecisionMachine("a", 2*time.Hour), ServerObjects{}, "created before rolloutAfter"},
		{"both set: created after both", withBoth, cpfixtures.DecisionMachine("a", 30*time.Minute), ServerObjects{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := UpToDateReason(tc.m, tc.objs, false, tc.kcp, cpfixtures.T0)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("UpToDateReason = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSelectMachineForScaleDown(t *testing.T) {
	fds := []clusterv1.FailureDomain{{Name: "a", ControlPlane: ptr.To(true)}, {Name: "b", ControlPlane: ptr.To(true)}}
	withFDs := &clusterv1.Cluster{Status: clusterv1.ClusterStatus{FailureDomains: fds}}
	noFDs := &clusterv1.Cluster{}

	cases := []struct {
		name     string
		cluster  *clusterv1.Cluster
		machines []*clusterv1.Machine
		outdated []string
		want     string
	}{
		{"oldest without failure domains", noFDs,
			[]*clusterv1.Machine{cpfixtures.DecisionMachine("new", time.Hour), cpfixtures.DecisionMachine("old", 3*time.Hour), cpfixtures.DecisionMachine("mid", 2*time.Hour)}, nil, "old"},
		{"delete annotation first", noFDs,
			[]*clusterv1.Machine{cpfixtures.DecisionMachine("old", 3*time.Hour), cpfixtures.DecisionMachine("marked", time.Hour, cpfixtures.MarkedForDeletion())}, []string{"old"}, "marked"},
		{"outdated before up to date", noFDs,
			[]*clusterv1.Machine{cpfixtures.DecisionMachine("old", 3*time.Hour), cpfixtures.DecisionMachine("stale", time.Hour)}, []string{"stale"}, "stale"},
		{"failure domain with most servers, oldest there", withFDs,
			[]*clusterv1.Machine{cpfixtures.DecisionMachine("a1", 5*time.Hour, cpfixtures.InFD("a")), cpfixtures.DecisionMachine("b1", 4*time.Hour, cpfixtures.InFD("b")), cpfixtures.DecisionMachine("b2", 3*time.Hour, cpfixtures.InFD("b"))}, nil, "b1"},
		{"outdated in the crowded failure domain", withFDs,
			[]*clusterv1.Machine{cpfixtures.DecisionMachine("a1", 5*time.Hour, cpfixtures.InFD("a")), cpfixtures.DecisionMachine("a2", time.Hour, cpfixtures.InFD("a")), cpfixtures.DecisionMachine("b1", 4*time.Hour, cpfixtures.InFD("b"))}, []string{"a2", "b1"}, "a2"},
		// The Cluster no longer lists a server's failure domain: that server goes first,
		// else the scale-down would stall (PickMost only counts listed domains).
		{"server in a removed failure domain first", withFDs,
			[]*clusterv1.Machine{cpfixtures.DecisionMachine("a1", 5*time.Hour, cpfixtures.InFD("a")), cpfixtures.DecisionMachine("b1", 4*time.Hour, cpfixtures.InFD("b")), cpfixtures.DecisionMachine("c1", time.Hour, cpfixtures.InFD("c"))}, nil, "c1"},
		{"only servers in removed failure domains", withFDs,
			[]*clusterv1.Machine{cpfixtures.DecisionMachine("c1", 5*time.Hour, cpfixtures.InFD("c")), cpfixtures.DecisionMachine("d1", 4*time.Hour, cpfixtures.InFD("d"))}, nil, "c1"},
		{"outdated server in a removed failure domain", withFDs,
			[]*clusterv1.Machine{cpfixtures.DecisionMachine("a1", 5*time.Hour, cpfixtures.InFD("a")), cpfixtures.DecisionMachine("a2", 4*time.Hour, cpfixtures.InFD("a")), cpfixtures.DecisionMachine("c1", time.Hour, cpfixtures.InFD("c"))}, []string{"c1"}, "c1"},
		{"server without a failure domain while the Cluster has some", withFDs,
			[]*clusterv1.Machine{cpfixtures.DecisionMachine("a1", 5*time.Hour, cpfixtures.InFD("a")), cpfixtures.DecisionMachine("a2", 4*time.Hour, cpfixtures.InFD("a")), cpfixtures.DecisionMachine("none", time.Hour)}, nil, "none"},
		{"a server being deleted is never picked", noFDs,
			[]*clusterv1.Machine{cpfixtures.DecisionMachine("old", 3*time.Hour, cpfixtures.BeingDeleted()), cpfixtures.DecisionMachine("new", time.Hour)}, nil, "new"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			machines := collections.FromMachines(tc.machines...)
			outdated := named(machines, tc.outdated)
			got := SelectMachineForScaleDown(context.Background(), tc.cluster, machines, outdated, notUpdatingInPlace)
			if got == nil || got.Name != tc.want {
				t.Errorf("picked %v, want %s", got, tc.want)
			}
		})
	}
}

// A new server goes where the fewest up-to-date servers are: during a rollout, the
// outdated servers about to go do not count, so the servers that remain are spread.
// CAPI breaks a tie between domains at random on purpose, so a tied case names every
// domain it may pick and is run many times: a worker domain must never come out.
func TestFailureDomainForScaleUp(t *testing.T) {
	fds := []clusterv1.FailureDomain{{Name: "a", ControlPlane: ptr.To(true)}, {Name: "b", ControlPlane: ptr.To(true)}, {Name: "w"}}
	cluster := &clusterv1.Cluster{Status: clusterv1.ClusterStatus{FailureDomains: fds}}
	for _, tc := range []struct {
		name     string
		machines []*clusterv1.Machine
		outdated []string
		want     string
	}{
		{"fewest servers", []*clusterv1.Machine{cpfixtures.DecisionMachine("a1", time.Hour, cpfixtures.InFD("a")), cpfixtures.DecisionMachine("a2", time.Hour, cpfixtures.InFD("a")), cpfixtures.DecisionMachine("b1", time.Hour, cpfixtures.InFD("b"))}, nil, "b"},
		{"outdated servers do not count", []*clusterv1.Machine{cpfixtures.DecisionMachine("a1", time.Hour, cpfixtures.InFD("a")), cpfixtures.DecisionMachine("a2", time.Hour, cpfixtures.InFD("a")), cpfixtures.DecisionMachine("b1", time.Hour, cpfixtures.InFD("b"))}, []string{"a1", "a2"}, "a"},
		{"servers being deleted do not count", []*clusterv1.Machine{cpfixtures.DecisionMachine("a1", time.Hour, cpfixtures.InFD("a"), cpfixtures.BeingDeleted()), cpfixtures.DecisionMachine("a2", time.Hour, cpfixtures.InFD("a"), cpfixtures.BeingDeleted()), cpfixtures.DecisionMachine("b1", time.Hour, cpfixtures.InFD("b"))}, nil, "a"},
		{"only control-plane domains", []*clusterv1.Machine{cpfixtures.DecisionMachine("a1", time.Hour, cpfixtures.InFD("a")), cpfixtures.DecisionMachine("b1", time.Hour, cpfixtures.InFD("b"))}, nil, "a|b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			machines := collections.FromMachines(tc.machines...)
			outdated := named(machines, tc.outdated)
			for range 20 {
				if got := FailureDomainForScaleUp(context.Background(), cluster, machines, outdated); !slices.Contains(strings.Split(tc.want, "|"), got) {
					t.Fatalf("failure domain = %q, want %s", got, tc.want)
				}
			}
		})
	}
}

// The one time-based wake-up is the soonest rollout deadline still ahead.
func TestUntilRolloutAfter(t *testing.T) {
	kcp := cpfixtures.DecisionKCP(3, nil)
	if d := UntilRolloutAfter(kcp, cpfixtures.T0); d != 0 {
		t.Errorf("no deadline: %v, want none", d)
	}
	kcp.Spec.RolloutAfter = ptr.To(metav1.NewTime(cpfixtures.T0.Add(3 * time.Hour)))
	kcp.Spec.Rollout.After = metav1.NewTime(cpfixtures.T0.Add(time.Hour))
	if d := UntilRolloutAfter(kcp, cpfixtures.T0); d != time.Hour {
		t.Errorf("two deadlines ahead: %v, want the sooner, 1h", d)
	}
	kcp.Spec.Rollout.After = metav1.NewTime(cpfixtures.T0.Add(-time.Hour))
	if d := UntilRolloutAfter(kcp, cpfixtures.T0); d != 3*time.Hour {
		t.Errorf("one past, one ahead: %v, want 3h", d)
	}
}

func TestNextStep(t *testing.T) {
	zero, one := 0, 1
	fresh := func(name string) *clusterv1.Machine { return cpfixtures.DecisionMachine(name, time.Hour) }
	old := func(name string) *clusterv1.Machine {
		return cpfixtures.DecisionMachine(name, time.Hour, cpfixtures.WithVersion("v1.30.8+k3s1"))
	}
	cases := []struct {
		name        string
		kcp         *controlplanev1.KThreesControlPlane
		machines    []*clusterv1.Machine
		ready       []string
		token       bool
		want        Step
		wantBlocked string
	}{
		{"at rest", cpfixtures.DecisionKCP(3, nil), []*clusterv1.Machine{fresh("a"), fresh("b"), fresh("c")}, []string{"a", "b", "c"}, true, StepNone, ""},
		{"first server needs no preflight", cpfixtures.DecisionKCP(1, nil), nil, nil, true, StepScaleUp, ""},
		{"scale up", cpfixtures.DecisionKCP(3, nil), []*clusterv1.Machine{fresh("a")}, []string{"a"}, true, StepScaleUp, ""},
		{"no scale up without the token", cpfixtures.DecisionKCP(3, nil), []*clusterv1.Machine{fresh("a")}, []string{"a"}, false, StepNone, "join token"},
		{"wait for the new node", cpfixtures.DecisionKCP(3, nil), []*clusterv1.Machine{fresh("a"), fresh("b")}, []string{"a"}, true, StepNone, "node of Machine b"},
		{"wait for a deletion", cpfixtures.DecisionKCP(1, nil), []*clusterv1.Machine{fresh("a"), cpfixtures.DecisionMachine("b", time.Hour, cpfixtures.BeingDeleted())}, []string{"a", "b"}, true, StepNone, "Machine b to be deleted"},
		{"scale down", cpfixtures.DecisionKCP(1, nil), []*clusterv1.Machine{fresh("a"), fresh("b"), fresh("c")}, []string{"a", "b", "c"}, true, StepScaleDown, ""},
		{"rollout, maxSurge 1: new server first", cpfixtures.DecisionKCP(3, &one), []*clusterv1.Machine{old("a"), fresh("b"), fresh("c")}, []string{"a", "b", "c"}, true, StepScaleUp, ""},
		{"rollout, default maxSurge is 1", cpfixtures.DecisionKCP(3, nil), []*clusterv1.Machine{old("a"), fresh("b"), fresh("c")}, []string{"a", "b", "c"}, true, StepScaleUp, ""},
		{"rollout, maxSurge 1: then the outdated one goes", cpfixtures.DecisionKCP(3, &one), []*clusterv1.Machine{old("a"), fresh("b"), fresh("c"), fresh("d")}, []string{"a", "b", "c", "d"}, true, StepScaleDown, ""},
		{"rollout, maxSurge 0: outdated one goes first", cpfixtures.DecisionKCP(3, &zero), []*clusterv1.Machine{old("a"), fresh("b"), fresh("c")}, []string{"a", "b", "c"}, true, StepScaleDown, ""},
		{"rollout, maxSurge 0 refused below 3 servers", cpfixtures.DecisionKCP(1, &zero), []*clusterv1.Machine{old("a")}, []string{"a"}, true, StepNone, "loses etcd quorum"},
		{"rollout waits for health", cpfixtures.DecisionKCP(3, nil), []*clusterv1.Machine{old("a"), fresh("b"), fresh("c")}, []string{"a", "b"}, true, StepNone, "node of Machine c"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seen := Observed{Machines: collections.FromMachines(tc.machines...), Nodes: cpfixtures.ReadyNodes(tc.ready...)}
			got, blocked := NextStep(tc.kcp, seen, outdated(tc.kcp, seen.Machines, cpfixtures.T0), tc.token)
			if got != tc.want || !strings.Contains(blocked, tc.wantBlocked) || (tc.wantBlocked == "") != (blocked == "") {
				t.Errorf("NextStep = %v, %q; want %v, %q", got, blocked, tc.want, tc.wantBlocked)
			}
		})
	}
}

func TestNextStepOnDatastore(t *testing.T) {
	zero := 0
	fresh := func(name string) *clusterv1.Machine { return cpfixtures.DecisionMachine(name, time.Hour) }
	old := func(name string) *clusterv1.Machine {
		return cpfixtures.DecisionMachine(name, time.Hour, cpfixtures.WithVersion("v1.30.8+k3s1"))
	}
	for _, tc := range []struct {
		name        string
		kcp         *controlplanev1.KThreesControlPlane
		machines    []*clusterv1.Machine
		want        Step
		wantBlocked string
	}{
		{"scale 2 to 1", cpfixtures.OnDatastore(cpfixtures.DecisionKCP(1, nil)), []*clusterv1.Machine{fresh("a"), fresh("b")}, StepScaleDown, ""},
		{"maxSurge 0 with 2 servers: no quorum to keep", cpfixtures.OnDatastore(cpfixtures.DecisionKCP(2, &zero)), []*clusterv1.Machine{old("a"), fresh("b")}, StepScaleDown, ""},
		{"maxSurge 0 with 1 server keeps the API up", cpfixtures.OnDatastore(cpfixtures.DecisionKCP(1, &zero)), []*clusterv1.Machine{old("a")}, StepNone, "without an API server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names := []string{}
			for _, m := range tc.machines {
				names = append(names, m.Name)
			}
			seen := Observed{Machines: collections.FromMachines(tc.machines...), Nodes: cpfixtures.ReadyNodes(names...)}
			got, blocked := NextStep(tc.kcp, seen, outdated(tc.kcp, seen.Machines, cpfixtures.T0), true)
			if got != tc.want || !strings.Contains(blocked, tc.wantBlocked) || (tc.wantBlocked == "") != (blocked == "") {
				t.Errorf("NextStep = %v, %q; want %v, %q", got, blocked, tc.want, tc.wantBlocked)
			}
		})
	}
}

// No step is decided on Nodes that could not be read, and the reason says so.
func TestNoStepWhileTheWorkloadClusterIsUnreachable(t *testing.T) {
	machines := collections.FromMachines(cpfixtures.DecisionMachine("a", time.Hour, cpfixtures.WithVersion("v1.30.9+k3s1")),
		cpfixtures.DecisionMachine("b", time.Hour), cpfixtures.DecisionMachine("c", time.Hour))
	for _, tc := range []struct {
		name     string
		replicas int32
		outdated collections.Machines
	}{
		{"scale up", 5, nil},
		{"scale down", 1, nil},
		{"rollout", 3, collections.FromMachines(machines["a"])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step, why := NextStep(cpfixtures.DecisionKCP(tc.replicas, nil), Observed{Machines: machines}, tc.outdated, true)
			if step != StepNone || why != BlockedUnreachable {
				t.Errorf("NextStep = %v, %q; want no step, %q", step, why, BlockedUnreachable)
			}
		})
	}
}
