package specdiff

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
)

// A Change is one field whose current and desired values differ.
type Change struct {
	// Path is the field's path from the compared maps' root, one key a segment.
	Path []string
	// Desired is the field's desired value; nil when Removed.
	Desired any
	// Removed is true when the desired side has no value (absent or null) where the
	// current side has one.
	Removed bool
}

// Diff lists the leaves where cur and des differ: objects are compared key by key,
// anything else (lists, scalars) as a whole. A null value and an absent key are the
// same (the API server does not keep nulls for unset fields). The order is stable:
// keys sorted at every level.
func Diff(cur, des map[string]any) []Change {
	return diff(cur, des, nil)
}

func diff(cur, des map[string]any, prefix []string) []Change {
	keys := make([]string, 0, len(cur)+len(des))
	for k := range cur {
		keys = append(keys, k)
	}
	for k := range des {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var out []Change
	for _, k := range keys {
		path := append(slices.Clone(prefix), k)
		cv, cok := cur[k]
		dv, dok := des[k]
		cm, cIsMap := cv.(map[string]any)
		dm, dIsMap := dv.(map[string]any)
		switch {
		case cIsMap && dIsMap:
			out = append(out, diff(cm, dm, path)...)
		case !dok || dv == nil:
			if cok && cv != nil {
				out = append(out, Change{Path: path, Removed: true})
			}
		case !cok || !reflect.DeepEqual(cv, dv):
			out = append(out, Change{Path: path, Desired: dv})
		}
	}
	return out
}

// Fields names the top-level fields in which two values differ, compared as Diff
// compares them after both went through JSON (so a field a Go type leaves empty and
// one it leaves unset are equal, as the API does not tell them apart). Values that
// do not encode as JSON objects differ as a whole: the result is one entry saying so.
func Fields(a, b any) []string {
	x, errA := ToMap(a)
	y, errB := ToMap(b)
	if err := errors.Join(errA, errB); err != nil {
		return []string{"(undecodable: " + err.Error() + ")"}
	}
	var out []string
	for _, c := range Diff(x, y) {
		out = append(out, c.Path[0])
	}
	return slices.Compact(out)
}

// ToMap is v as a JSON object: v encoded and decoded again. null is an empty object.
func ToMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil && string(raw) != "null" {
		return nil, err
	}
	return out, nil
}
