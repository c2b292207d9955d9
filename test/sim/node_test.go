package sim

import (
	"maps"
	"net"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/token"
)

const testProviderID = "sim://default/machine-0"

// uninitialized is Cluster API's taint on new agents' Nodes.
var uninitialized = corev1.Taint{Key: "node.cluster.x-k8s.io/uninitialized", Effect: corev1.TaintEffectNoSchedule}

// k3sLabels are the labels every k3s Node has, for a Node named name.
func k3sLabels(name string) map[string]string {
	return map[string]string{
		corev1.LabelHostname:           name,
		corev1.LabelOSStable:           "linux",
		corev1.LabelArchStable:         "amd64",
		corev1.LabelInstanceTypeStable: "k3s",
	}
}

func TestNodeForRenderedData(t *testing.T) {
	t.Parallel()
	ca := mustCAs(t, theCAs)
	j := mustJoinTokens(t, token.Token{Server: "s3rver", Agent: "ag3nt"}, ca.serverCA)
	render := func(role cloudinit.Role, ac bootstrapv1.KThreesAgentConfig) *bootData {
		in := cloudinit.Input{Role: role, Version: testVersion, Token: j.server, AgentToken: j.agent, Spec: bootstrapv1.KThreesConfigSpec{AgentConfig: ac}}
		switch role {
		case cloudinit.ServerInit:
			in.Certificates = ca.files
		case cloudinit.Agent:
			in.Token, in.AgentToken, in.ServerURL = j.agent, "", testEndpoint
		}
		b, _ := parseRendered(t, mustRender(t, in))
		return b
	}
	const host = "machine-0"
	serverLabels := k3sLabels(host)
	serverLabels["node-role.kubernetes.io/control-plane"] = "true"
	serverLabels["node-role.kubernetes.io/etcd"] = "true"
	renamedAgentLabels := k3sLabels("worker-x")
	renamedAgentLabels["tier"] = "worker"
	renamedAgentLabels["example.com/flag"] = ""
	renamedAgentLabels["zone"] = "a=b"

	tests := []struct {
		name            string
		b               *bootData
		etcdMember      string
		wantName        string
		wantRole        string
		wantLabels      map[string]string
		wantAnnotations map[string]string
		wantTaints      []corev1.Taint
	}{
		{
			name:       "server",
			b:          render(cloudinit.ServerInit, bootstrapv1.KThreesAgentConfig{}),
			etcdMember: host + "-1a2b3c4d",
			wantName:   host, wantRole: roleServer,
			wantLabels: serverLabels,
			wantAnnotations: map[string]string{
				"k3s.io/hostname": host, "k3s.io/internal-ip": machineAddress(host),
				"etcd.k3s.cattle.io/node-name": host + "-1a2b3c4d", "etcd.k3s.cattle.io/node-address": machineAddress(host),
			},
		},
		{
			name:       "agent",
			b:          render(cloudinit.Agent, bootstrapv1.KThreesAgentConfig{}),
			wantName:   host,
			wantRole:   roleAgent,
			wantLabels: k3sLabels(host),
			wantAnnotations: map[string]string{
				"k3s.io/hostname": host, "k3s.io/internal-ip": machineAddress(host),
			},
			// capk3s renders Cluster API's taint into every agent's node-taint.
			wantTaints: []corev1.Taint{uninitialized},
		},
		{
			name: "agent with node-name, labels and taints",
			b: render(cloudinit.Agent, bootstrapv1.KThreesAgentConfig{
				NodeName:   "worker-x",
				NodeLabels: []string{"tier=worker", "example.com/flag", "zone=a=b"},
				NodeTaints: []string{"dedicated=gpu:NoSchedule", "spot:PreferNoSchedule", "evict=now:NoExecute"},
			}),
			wantName:   "worker-x",
			wantRole:   roleAgent,
			wantLabels: renamedAgentLabels,
			wantAnnotations: map[string]string{
				// The address is the machine's, whatever the Node is named.
				"k3s.io/hostname": "worker-x", "k3s.io/internal-ip": machineAddress(host),
			},
			wantTaints: []corev1.Taint{
				{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
				{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule},
				{Key: "evict", Value: "now", Effect: corev1.TaintEffectNoExecute},
				uninitialized,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, err := nodeFor(tc.b, host, testProviderID)
			if err != nil {
				t.Fatalf("nodeFor: %v", err)
			}
			if n.name != tc.wantName || n.role != tc.wantRole || n.version != testVersion ||
				n.providerID != testProviderID || n.address != machineAddress(host) {
				t.Errorf("nodeFor = %+v, want name %q, role %q, version %q, providerID %q, address %q",
					n, tc.wantName, tc.wantRole, testVersion, testProviderID, machineAddress(host))
			}
			n.etcdMember = tc.etcdMember
			obj, err := n.object()
			if err != nil {
				t.Fatalf("object: %v", err)
			}
			if obj.Name != tc.wantName {
				t.Errorf("Node name = %q, want %q", obj.Name, tc.wantName)
			}
			if obj.Spec.ProviderID != testProviderID {
				t.Errorf("providerID = %q, want %q", obj.Spec.ProviderID, testProviderID)
			}
			if !maps.Equal(obj.Labels, tc.wantLabels) {
				t.Errorf("labels = %v, want %v", obj.Labels, tc.wantLabels)
			}
			if !maps.Equal(obj.Annotations, tc.wantAnnotations) {
				t.Errorf("annotations = %v, want %v", obj.Annotations, tc.wantAnnotations)
			}
			if !reflect.DeepEqual(obj.Spec.Taints, tc.wantTaints) {
				t.Errorf("taints = %+v, want %+v", obj.Spec.Taints, tc.wantTaints)
			}
		})
	}
}

func TestNodeObjectRoles(t *testing.T) {
	t.Parallel()
	roleLabels := []string{"node-role.kubernetes.io/control-plane", etcdRoleLabel}
	etcdAnnotations := []string{etcdNodeNameAnnotation, etcdNodeAddressAnnotation}
	for _, role := range []string{roleServer, roleAgent} {
		n := node{name: "n", role: role, address: "10.100.1.2", etcdMember: "n-abc"}
		obj, err := n.object()
		if err != nil {
			t.Fatalf("%s: object: %v", role, err)
		}
		for _, l := range roleLabels {
			v, ok := obj.Labels[l]
			if role == roleServer && v != "true" {
				t.Errorf("server label %s = %q, want true", l, v)
			}
			if role == roleAgent && ok {
				t.Errorf("agent has label %s=%q", l, v)
			}
		}
		// k3s stopped setting the master role label before v1.34 (k3smodel/nodelabels.go).
		if v, ok := obj.Labels["node-role.kubernetes.io/master"]; ok {
			t.Errorf("%s has label node-role.kubernetes.io/master=%q", role, v)
		}
		for _, a := range etcdAnnotations {
			v, ok := obj.Annotations[a]
			if role == roleServer && !ok {
				t.Errorf("server lacks annotation %s", a)
			}
			if role == roleAgent && ok {
				t.Errorf("agent has annotation %s=%q", a, v)
			}
		}
		if role == roleServer {
			if got := obj.Annotations[etcdNodeNameAnnotation]; got != "n-abc" {
				t.Errorf("%s = %q, want n-abc", etcdNodeNameAnnotation, got)
			}
			if got := obj.Annotations[etcdNodeAddressAnnotation]; got != "10.100.1.2" {
				t.Errorf("%s = %q, want 10.100.1.2", etcdNodeAddressAnnotation, got)
			}
		}
	}
	// The names must be those k3s's etcd member controller uses.
	for got, want := range map[string]string{
		etcdRoleLabel:             "node-role.kubernetes.io/etcd",
		etcdNodeNameAnnotation:    "etcd.k3s.cattle.io/node-name",
		etcdNodeAddressAnnotation: "etcd.k3s.cattle.io/node-address",
	} {
		if got != want {
			t.Errorf("k3s key %q, want %q", got, want)
		}
	}
}

func TestNodeForOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		cfg        map[string]any
		wantName   string
		wantLabels []string
		wantTaints []string
		wantErr    string
	}{
		{name: "no options", cfg: map[string]any{}, wantName: "host-1"},
		{name: "node-name overrides the hostname", cfg: map[string]any{"node-name": "custom"}, wantName: "custom"},
		{name: "empty node-name keeps the hostname", cfg: map[string]any{"node-name": ""}, wantName: "host-1"},
		{name: "non-string node-name keeps the hostname", cfg: map[string]any{"node-name": 7.0}, wantName: "host-1"},
		{
			name: "single-string label and taint", wantName: "host-1",
			cfg:        map[string]any{"node-label": "a=b", "node-taint": "k=v:NoSchedule"},
			wantLabels: []string{"a=b"}, wantTaints: []string{"k=v:NoSchedule"},
		},
		{
			name: "label and taint lists", wantName: "host-1",
			cfg:        map[string]any{"node-label": []any{"a=b", "c=d"}, "node-taint": []any{}},
			wantLabels: []string{"a=b", "c=d"}, wantTaints: []string{},
		},
		{
			name: "label that is a number", cfg: map[string]any{"node-label": []any{"a=b", 3.0}},
			wantErr: "node-label: 3 is not a string",
		},
		{
			name: "taint that is a map", cfg: map[string]any{"node-taint": map[string]any{"k": "v"}},
			wantErr: "node-taint is map[string]interface {}, not a list of strings",
		},
		{
			name: "label that is a boolean", cfg: map[string]any{"node-label": true},
			wantErr: "node-label is bool, not a list of strings",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := &bootData{install: installCommand{role: roleAgent, version: testVersion}, k3sConfig: tc.cfg}
			n, err := nodeFor(b, "host-1", testProviderID)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("nodeFor = %+v, %v, want an error containing %q", n, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("nodeFor: %v", err)
			}
			if n.name != tc.wantName {
				t.Errorf("name = %q, want %q", n.name, tc.wantName)
			}
			if !reflect.DeepEqual(n.labels, tc.wantLabels) {
				t.Errorf("labels = %#v, want %#v", n.labels, tc.wantLabels)
			}
			if !reflect.DeepEqual(n.taints, tc.wantTaints) {
				t.Errorf("taints = %#v, want %#v", n.taints, tc.wantTaints)
			}
			if n.address != machineAddress("host-1") {
				t.Errorf("address = %q, want the hostname's %q", n.address, machineAddress("host-1"))
			}
		})
	}
}

func TestStringList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		value   any
		want    []string
		wantErr bool
	}{
		{name: "unset", value: nil, want: nil},
		{name: "single string", value: "a=b", want: []string{"a=b"}},
		{name: "empty string", value: "", want: []string{""}},
		{name: "list", value: []any{"a", "b"}, want: []string{"a", "b"}},
		{name: "empty list", value: []any{}, want: []string{}},
		{name: "list with a number", value: []any{"a", 1.0}, wantErr: true},
		{name: "list with a nested list", value: []any{[]any{"a"}}, wantErr: true},
		{name: "number", value: 1.0, wantErr: true},
		{name: "typed string slice, not what YAML gives", value: []string{"a"}, wantErr: true},
	}
	for _, tc := range tests {
		cfg := map[string]any{}
		if tc.value != nil {
			cfg["k"] = tc.value
		}
		got, err := stringList(cfg, "k")
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: stringList = %#v, %v, want error: %v", tc.name, got, err, tc.wantErr)
			continue
		}
		if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: stringList = %#v, want %#v", tc.name, got, tc.want)
		}
	}
}

func TestParseTaint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    corev1.Taint
		wantErr string
	}{
		{in: "k=v:NoSchedule", want: corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}},
		{in: "k=v:PreferNoSchedule", want: corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectPreferNoSchedule}},
		{in: "k=v:NoExecute", want: corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}},
		{in: "k:NoSchedule", want: corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}},
		{in: "example.com/k=:NoSchedule", want: corev1.Taint{Key: "example.com/k", Effect: corev1.TaintEffectNoSchedule}},
		{in: "k=v", wantErr: "has no effect"},
		{in: "k=v:noschedule", wantErr: `unknown effect "noschedule"`},
		{in: "k=v:Evict", wantErr: `unknown effect "Evict"`},
		{in: "k=v:", wantErr: `unknown effect ""`},
		{in: "k=v:NoSchedule:x", wantErr: `unknown effect "NoSchedule:x"`},
	}
	for _, tc := range tests {
		got, err := parseTaint(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseTaint(%q) = %+v, %v, want an error containing %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseTaint(%q) = %+v, %v, want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestNodeObjectBadTaint(t *testing.T) {
	t.Parallel()
	b := &bootData{
		install:   installCommand{role: roleAgent, version: testVersion},
		k3sConfig: map[string]any{"node-taint": []any{"ok=1:NoSchedule", "bad=1:Sometimes"}},
	}
	n, err := nodeFor(b, "host-1", testProviderID)
	if err != nil {
		t.Fatalf("nodeFor: %v", err)
	}
	obj, err := n.object()
	if err == nil || !strings.Contains(err.Error(), `node-taint "bad=1:Sometimes": unknown effect "Sometimes"`) {
		t.Fatalf("object() = %v, %v, want the bad taint's error", obj, err)
	}
}

func TestMachineAddress(t *testing.T) {
	t.Parallel()
	names := []string{"", "a", "b", "machine-0", "machine-1", "cp-abcde", "md-0-xyz12-qwert", strings.Repeat("x", 253)}
	seen := map[string]string{}
	for _, name := range names {
		addr := machineAddress(name)
		if again := machineAddress(name); again != addr {
			t.Errorf("machineAddress(%q) = %s, then %s: not stable", name, addr, again)
		}
		ip := net.ParseIP(addr)
		if ip == nil || ip.To4() == nil || ip.To4().String() != addr {
			t.Errorf("machineAddress(%q) = %q, not an IPv4 address in canonical form", name, addr)
			continue
		}
		v4 := ip.To4()
		if !ip.IsPrivate() || v4[0] != 10 || v4[1] < 100 || v4[1] > 199 || v4[3] == 0 || v4[3] == 255 {
			t.Errorf("machineAddress(%q) = %s, want 10.100-199.x.1-254", name, addr)
		}
		if other, dup := seen[addr]; dup {
			t.Errorf("machineAddress(%q) = machineAddress(%q) = %s", name, other, addr)
		}
		seen[addr] = name
	}
	// A known answer, so that a change of the scheme is seen: FNV-1a of "machine-0" is
	// 0x500003eb, so 10.(100+83).(0x03).(1+0x5000%254).
	if got, want := machineAddress("machine-0"), "10.183.3.161"; got != want {
		t.Errorf(`machineAddress("machine-0") = %s, want %s`, got, want)
	}
}
