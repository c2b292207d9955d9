package specdiff

import (
	"reflect"
	"strings"
	"testing"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cur, des map[string]any
		want     []Change
	}{
		{name: "equal", cur: map[string]any{"a": 1.0, "b": map[string]any{"c": "x"}}, des: map[string]any{"b": map[string]any{"c": "x"}, "a": 1.0}},
		{name: "both empty", cur: nil, des: map[string]any{}},
		{name: "changed scalar", cur: map[string]any{"a": "x"}, des: map[string]any{"a": "y"},
			want: []Change{{Path: []string{"a"}, Desired: "y"}}},
		{name: "added", cur: map[string]any{}, des: map[string]any{"a": "y"},
			want: []Change{{Path: []string{"a"}, Desired: "y"}}},
		{name: "removed", cur: map[string]any{"a": "x"}, des: map[string]any{},
			want: []Change{{Path: []string{"a"}, Removed: true}}},
		{name: "null desired is removed", cur: map[string]any{"a": "x"}, des: map[string]any{"a": nil},
			want: []Change{{Path: []string{"a"}, Removed: true}}},
		{name: "null and absent are equal", cur: map[string]any{"a": nil}, des: map[string]any{"b": nil}},
		{name: "nested leaves, sorted", cur: map[string]any{"s": map[string]any{"z": 1.0, "a": 1.0, "k": "same"}},
			des:  map[string]any{"s": map[string]any{"z": 2.0, "a": 2.0, "k": "same"}},
			want: []Change{{Path: []string{"s", "a"}, Desired: 2.0}, {Path: []string{"s", "z"}, Desired: 2.0}}},
		{name: "lists compare whole", cur: map[string]any{"l": []any{"a", "b"}}, des: map[string]any{"l": []any{"b", "a"}},
			want: []Change{{Path: []string{"l"}, Desired: []any{"b", "a"}}}},
		{name: "object replaces a scalar", cur: map[string]any{"a": "x"}, des: map[string]any{"a": map[string]any{"b": 1.0}},
			want: []Change{{Path: []string{"a"}, Desired: map[string]any{"b": 1.0}}}},
		{name: "empty object and absent differ", cur: map[string]any{"a": map[string]any{}}, des: map[string]any{},
			want: []Change{{Path: []string{"a"}, Removed: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Diff(tt.cur, tt.des); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Diff = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestFields(t *testing.T) {
	t.Parallel()
	type spec struct {
		A string            `json:"a,omitempty"`
		B map[string]string `json:"b,omitempty"`
		C []string          `json:"c,omitempty"`
	}
	tests := []struct {
		name string
		a, b any
		want []string
	}{
		{name: "equal", a: spec{A: "x"}, b: spec{A: "x"}},
		{name: "empty and unset are equal", a: spec{B: map[string]string{}, C: []string{}}, b: spec{}},
		{name: "top-level names once, sorted", a: spec{A: "x", B: map[string]string{"k": "1", "l": "1"}},
			b: spec{A: "y", B: map[string]string{"k": "2", "l": "2"}, C: []string{"z"}}, want: []string{"a", "b", "c"}},
		{name: "nil is an empty object", a: nil, b: map[string]any{"a": "x"}, want: []string{"a"}},
		// An extension's patch may set a field to null where the desired object has
		// none: the API server keeps no null for an unset field, so nothing differs.
		{name: "null on one side only", a: map[string]any{}, b: map[string]any{"a": nil}},
		{name: "nested null and absent", a: map[string]any{"a": map[string]any{"b": nil}}, b: map[string]any{"a": map[string]any{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Fields(tt.a, tt.b); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Fields = %q, want %q", got, tt.want)
			}
		})
	}
	if got := Fields(func() {}, spec{}); len(got) != 1 || !strings.HasPrefix(got[0], "(undecodable: ") {
		t.Errorf("Fields of a value JSON cannot encode = %q, want one undecodable entry", got)
	}
}

// TestInPlaceIgnoredMachineFieldsAreMachineSpecFields keeps the list true to CAPI's
// Machine spec: a name that is not one of its JSON fields would ignore nothing.
func TestInPlaceIgnoredMachineFieldsAreMachineSpecFields(t *testing.T) {
	t.Parallel()
	fields := map[string]bool{}
	typ := reflect.TypeFor[clusterv1.MachineSpec]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		fields[name] = true
	}
	for _, f := range InPlaceIgnoredMachineFields {
		if !fields[f] {
			t.Errorf("%q is not a JSON field of CAPI's Machine spec", f)
		}
	}
	for _, kept := range []string{"version", "failureDomain"} {
		if !fields[kept] {
			t.Errorf("%q, which an in-place update is about, is not a JSON field of CAPI's Machine spec", kept)
		}
	}
}
