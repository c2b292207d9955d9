package inplace

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// serverObjs is a control-plane machine's three objects as the control plane sends them.
func serverObjs(version string) Objects {
	return Objects{
		Machine: map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "spec": map[string]any{
			"clusterName": "c1", "version": version, "failureDomain": "fd-a",
			"bootstrap":         map[string]any{"configRef": map[string]any{"name": "cp-0"}},
			"infrastructureRef": map[string]any{"name": "cp-0"}, "providerID": "sim://ns/cp-0",
		}},
		Bootstrap: map[string]any{"kind": "KThreesConfig", "spec": map[string]any{
			"serverConfig": map[string]any{"clusterCidr": "10.42.0.0/16", "disableComponents": []any{"traefik"}},
			"agentConfig":  map[string]any{"nodeLabels": []any{"role=server"}},
		}},
		Infra: map[string]any{"kind": "SimMachine", "spec": map[string]any{"providerID": "sim://ns/cp-0"}},
	}
}

// agentObjs is a MachineSet's machine template and its two templates.
func agentObjs(version string) Objects {
	return Objects{
		Machine: map[string]any{"kind": "MachineSet", "spec": map[string]any{"clusterName": "c1", "replicas": 2.0,
			"template": map[string]any{"spec": map[string]any{"clusterName": "c1", "version": version,
				"infrastructureRef": map[string]any{"name": "agents-v1"}}}}},
		Bootstrap: map[string]any{"kind": "KThreesConfigTemplate", "spec": map[string]any{"template": map[string]any{
			"spec": map[string]any{"agentConfig": map[string]any{"nodeLabels": []any{"role=agent"}}}}}},
		Infra: map[string]any{"kind": "SimMachineTemplate", "spec": map[string]any{"template": map[string]any{"spec": map[string]any{}}}},
	}
}

func set(obj map[string]any, value any, path ...string) {
	m := obj
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = value
}

func TestDecideMachine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		cur, des    Objects
		edit        func(des *Objects)
		wantCovered []string
		wantRefused []string // substrings, one per refusal
		wantTarget  string
	}{
		{name: "nothing changed", cur: serverObjs("v1.31.4+k3s1"), des: serverObjs("v1.31.4+k3s1")},
		{name: "patch release", cur: serverObjs("v1.31.4+k3s1"), des: serverObjs("v1.31.5+k3s1"),
			wantCovered: []string{"Machine spec.version"}, wantTarget: "v1.31.5+k3s1"},
		{name: "k3s build", cur: serverObjs("v1.31.4+k3s1"), des: serverObjs("v1.31.4+k3s2"),
			wantCovered: []string{"Machine spec.version"}, wantTarget: "v1.31.4+k3s2"},
		{name: "next minor", cur: serverObjs("v1.31.4+k3s1"), des: serverObjs("v1.32.1+k3s1"),
			wantCovered: []string{"Machine spec.version"}, wantTarget: "v1.32.1+k3s1"},
		{name: "two minors", cur: serverObjs("v1.31.4+k3s1"), des: serverObjs("v1.33.0+k3s1"),
			wantRefused: []string{"skips a minor release"}},
		{name: "downgrade", cur: serverObjs("v1.32.1+k3s1"), des: serverObjs("v1.31.4+k3s1"),
			wantRefused: []string{"is a downgrade"}},
		{name: "older k3s build", cur: serverObjs("v1.31.4+k3s2"), des: serverObjs("v1.31.4+k3s1"),
			wantRefused: []string{"is a downgrade"}},
		{name: "not a k3s version", cur: serverObjs("v1.31.4+k3s1"), des: serverObjs("v1.32.1+rke2r1"),
			wantRefused: []string{"desired version: \"v1.32.1+rke2r1\" is not a k3s version"}},
		{name: "major", cur: serverObjs("v1.31.4+k3s1"), des: serverObjs("v2.0.0+k3s1"),
			wantRefused: []string{"changes the major version"}},
		{name: "bootstrap config version follows the Machine's", cur: serverObjs("v1.31.4+k3s1"), des: serverObjs("v1.32.1+k3s1"),
			edit:        func(d *Objects) { set(d.Bootstrap, "v1.32.1+k3s1", "spec", "version") },
			wantCovered: []string{"Machine spec.version", "KThreesConfig spec.version"}, wantTarget: "v1.32.1+k3s1"},
		{name: "version with a CIDR change", cur: serverObjs("v1.31.4+k3s1"), des: serverObjs("v1.32.1+k3s1"),
			edit:        func(d *Objects) { set(d.Bootstrap, "10.99.0.0/16", "spec", "serverConfig", "clusterCidr") },
			wantCovered: []string{"Machine spec.version"}, wantTarget: "v1.32.1+k3s1",
			wantRefused: []string{"KThreesConfig spec.serverConfig.clusterCidr: the cluster's network is fixed"}},
		{name: "datastore", cur: serverObjs("v1.31.4+k3s1"), des: serverObjs("v1.31.4+k3s1"),
			edit: func(d *Objects) {
				set(d.Bootstrap, map[string]any{"endpointSecret": map[string]any{"name": "db", "key": "url"}}, "spec", "serverConfig", "datastore")
			},
			wantRefused: []string{"KThreesConfig spec.serverConfig.datastore: the datastore is chosen"}},
		{name: "k3s option", cur: serverObjs("v1.31.4+k3s1"), des: serverObjs("v1.31.4+k3s1"),
			edit:        func(d *Objects) { set(d.Bootstrap, []any{"role=server", "x=y"}, "spec", "agentConfig", "nodeLabels") },
			wantRefused: []string{"KThreesConfig spec.agentConfig.nodeLabels: k3s's config.yaml is written when the machine first boots"}},
		{name: "first-boot commands", cur: serverObjs("v1.31.4+k3s1"), des: serverObjs("v1.31.4+k3s1"),
			edit:        func(d *Objects) { set(d.Bootstrap, []any{"echo hi"}, "spec", "preK3sCommands") },
			wantRefused: []string{"KThreesConfig spec.preK3sCommands: the bootstrap data runs only when the machine first boots"}},
		{name: "infrastructure change", cur: serverObjs("v1.31.4+k3s1"), des: serverObjs("v1.32.1+k3s1"),
			edit:        func(d *Objects) { set(d.Infra, "large", "spec", "size") },
			wantCovered: []string{"Machine spec.version"}, wantTarget: "v1.32.1+k3s1",
			wantRefused: []string{"infrastructure machine spec.size: the infrastructure of a running machine is not changed in place"}},
		{name: "the provider's providerID is no change", cur: serverObjs("v1.31.4+k3s1"), des: serverObjs("v1.32.1+k3s1"),
			edit:        func(d *Objects) { delete(d.Infra["spec"].(map[string]any), "providerID") },
			wantCovered: []string{"Machine spec.version"}, wantTarget: "v1.32.1+k3s1"},
		{name: "failure domain", cur: serverObjs("v1.31.4+k3s1"), des: serverObjs("v1.31.4+k3s1"),
			edit:        func(d *Objects) { set(d.Machine, "fd-b", "spec", "failureDomain") },
			wantRefused: []string{"Machine spec.failureDomain: a machine cannot move"}},
		{name: "fields CAPI propagates itself", cur: serverObjs("v1.31.4+k3s1"), des: serverObjs("v1.31.4+k3s1"),
			edit: func(d *Objects) {
				set(d.Machine, 30.0, "spec", "minReadySeconds")
				set(d.Machine, map[string]any{"nodeDrainTimeoutSeconds": 10.0}, "spec", "deletion")
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.edit != nil {
				tc.edit(&tc.des)
			}
			d := DecideMachine(tc.cur, tc.des)
			checkDecision(t, d, tc.wantCovered, tc.wantRefused, tc.wantTarget)
			checkPatchesCover(t, tc.cur, tc.des, d, machineBase, len(tc.wantRefused) == 0)
		})
	}
}

func TestDecideMachineSet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		cur, des    Objects
		edit        func(des *Objects)
		wantCovered []string
		wantRefused []string
		wantTarget  string
	}{
		{name: "next minor", cur: agentObjs("v1.31.4+k3s1"), des: agentObjs("v1.32.1+k3s1"),
			wantCovered: []string{"Machine spec.version"}, wantTarget: "v1.32.1+k3s1"},
		{name: "new infrastructure template, same spec", cur: agentObjs("v1.31.4+k3s1"), des: agentObjs("v1.32.1+k3s1"),
			edit: func(d *Objects) {
				set(d.Machine, map[string]any{"name": "agents-v2"}, "spec", "template", "spec", "infrastructureRef")
			},
			wantCovered: []string{"Machine spec.version"}, wantTarget: "v1.32.1+k3s1"},
		{name: "new infrastructure template, new spec", cur: agentObjs("v1.31.4+k3s1"), des: agentObjs("v1.32.1+k3s1"),
			edit:        func(d *Objects) { set(d.Infra, "large", "spec", "template", "spec", "size") },
			wantCovered: []string{"Machine spec.version"}, wantTarget: "v1.32.1+k3s1",
			wantRefused: []string{"infrastructure machine spec.size"}},
		{name: "agent option", cur: agentObjs("v1.31.4+k3s1"), des: agentObjs("v1.31.4+k3s1"),
			edit: func(d *Objects) {
				set(d.Bootstrap, []any{"--max-pods=200"}, "spec", "template", "spec", "agentConfig", "kubeletArgs")
			},
			wantRefused: []string{"KThreesConfig spec.agentConfig.kubeletArgs"}},
		{name: "replicas are not the template", cur: agentObjs("v1.31.4+k3s1"), des: agentObjs("v1.31.4+k3s1"),
			edit: func(d *Objects) { set(d.Machine, 5.0, "spec", "replicas") }},
		{name: "skipping a minor", cur: agentObjs("v1.31.4+k3s1"), des: agentObjs("v1.33.0+k3s1"),
			wantRefused: []string{"skips a minor release"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.edit != nil {
				tc.edit(&tc.des)
			}
			d := DecideMachineSet(tc.cur, tc.des)
			checkDecision(t, d, tc.wantCovered, tc.wantRefused, tc.wantTarget)
			checkPatchesCover(t, tc.cur, tc.des, d, machineSetBase, len(tc.wantRefused) == 0)
		})
	}
}

func checkDecision(t *testing.T, d Decision, covered, refused []string, target string) {
	t.Helper()
	if !reflect.DeepEqual(d.Covered, covered) {
		t.Errorf("Covered = %q, want %q", d.Covered, covered)
	}
	if len(d.Refused) != len(refused) {
		t.Fatalf("Refused = %q, want %d refusals like %q", d.Refused, len(refused), refused)
	}
	for i, want := range refused {
		if !strings.Contains(d.Refused[i], want) {
			t.Errorf("Refused[%d] = %q, want it to contain %q", i, d.Refused[i], want)
		}
	}
	if d.TargetVersion != target {
		t.Errorf("TargetVersion = %q, want %q", d.TargetVersion, target)
	}
}

// checkPatchesCover applies the patches to the current objects as CAPI does and
// compares the specs with the desired ones (CAPI's ignored Machine fields aside):
// they must match exactly when nothing was refused, and not match otherwise.
func checkPatchesCover(t *testing.T, cur, des Objects, d Decision, base []string, wantMatch bool) {
	t.Helper()
	patched := Objects{
		Machine:   applyOps(t, cur.Machine, d.MachinePatch),
		Bootstrap: applyOps(t, cur.Bootstrap, d.BootstrapPatch),
		Infra:     applyOps(t, cur.Infra, d.InfraPatch),
	}
	left := DecideMachineSet(patched, des)
	if reflect.DeepEqual(base, machineBase) {
		left = DecideMachine(patched, des)
	}
	match := len(left.Covered) == 0 && len(left.Refused) == 0
	if match != wantMatch {
		t.Errorf("after the patches, the objects match: %v, want %v (left: %s)", match, wantMatch, left.Message())
	}
}

func applyOps(t *testing.T, obj map[string]any, ops []PatchOp) map[string]any {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) > 0 {
		p, err := jsonpatch.DecodePatch(jsonPatch(ops).Patch)
		if err != nil {
			t.Fatal(err)
		}
		if raw, err = p.Apply(raw); err != nil {
			t.Fatalf("applying %s: %v", jsonPatch(ops).Patch, err)
		}
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPlanName(t *testing.T) {
	t.Parallel()
	short := machineNamed("c1-control-plane-abcde")
	if got := PlanName(short); got != "capk3s-c1-control-plane-abcde" {
		t.Errorf("PlanName = %q", got)
	}
	long1 := machineNamed(strings.Repeat("a", 70) + "-1")
	long2 := machineNamed(strings.Repeat("a", 70) + "-2")
	n1, n2 := PlanName(long1), PlanName(long2)
	if len(n1) > maxPlanName || len(n2) > maxPlanName || n1 == n2 {
		t.Errorf("long names %q (%d) and %q (%d): want distinct, at most %d characters", n1, len(n1), n2, len(n2), maxPlanName)
	}
}
