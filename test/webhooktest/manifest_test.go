package webhooktest

import (
	"slices"
	"testing"
)

// TestStoredDifferencesSeesLoss: the comparison the compatibility tests rely on
// reports each way a stored object can differ from its manifest, so that those
// tests passing means nothing was lost.
func TestStoredDifferencesSeesLoss(t *testing.T) {
	written := Leaves(JSONValue(t, map[string]any{"spec": map[string]any{
		"a":     "x",
		"list":  []any{"p", "q"},
		"empty": map[string]any{},
		"old":   "2m",
		"ref":   map[string]any{"apiVersion": "g/v1", "uid": "u"},
	}}))
	moves := map[string]Move{
		"spec.old":            {To: "spec.new", Value: float64(120)},
		"spec.ref.apiVersion": {To: "spec.newRef.apiGroup", Value: "g", Kept: true},
	}
	exact := map[string]any{
		"spec.a": "x", "spec.list[0]": "p", "spec.list[1]": "q", "spec.empty": map[string]any{},
		"spec.new": float64(120), "spec.ref.apiVersion": "g/v1", "spec.ref.uid": "u", "spec.newRef.apiGroup": "g",
		"spec.default": true,
	}
	added := map[string]any{"spec.default": true}
	if diffs := StoredDifferences(written, exact, moves, added); len(diffs) != 0 {
		t.Fatalf("exact store reported as different: %q", diffs)
	}

	tests := []struct {
		name   string
		change func(map[string]any)
		want   string
	}{
		{"leaf pruned", func(s map[string]any) { delete(s, "spec.ref.uid") }, "spec.ref.uid: missing, want u"},
		{"list item lost", func(s map[string]any) { delete(s, "spec.list[1]") }, "spec.list[1]: missing, want q"},
		{"empty map pruned", func(s map[string]any) { delete(s, "spec.empty") }, "spec.empty: missing, want map[]"},
		{"value changed", func(s map[string]any) { s["spec.a"] = "y" }, "spec.a: stored y, want x"},
		{"not moved", func(s map[string]any) { delete(s, "spec.new") }, "spec.new: missing, want 120"},
		{"moved but old kept", func(s map[string]any) { s["spec.old"] = "2m" }, "spec.old: stored 2m, not expected (not written, or moved away)"},
		{"kept part dropped", func(s map[string]any) { delete(s, "spec.ref.apiVersion") }, "spec.ref.apiVersion: missing, want g/v1"},
		{"default missing", func(s map[string]any) { delete(s, "spec.default") }, "spec.default: missing, want true"},
		{"invented", func(s map[string]any) { s["spec.extra"] = "z" }, "spec.extra: stored z, not expected (not written, or moved away)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stored := map[string]any{}
			for k, v := range exact {
				stored[k] = v
			}
			tt.change(stored)
			diffs := StoredDifferences(written, stored, moves, added)
			if !slices.Equal(diffs, []string{tt.want}) {
				t.Errorf("differences %q, want exactly %q", diffs, tt.want)
			}
		})
	}
}
