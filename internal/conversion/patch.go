package conversion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// What is kept of a part is a JSON merge patch (RFC 7386) that turns a plain
// conversion of this side's part into the other side's part: only the fields that do
// not come back by themselves, not the whole part. Two kinds of field need more than
// the bare difference (see partRules).

// partRules says, for one part of a kind, which fields are kept whole and which never.
type partRules struct {
	// name is the part's name in the annotation ("spec", "status").
	name string
	// atomic fields are kept whole once any of their fields is kept: a converter
	// decides whether a kept value still applies by fields that do come back (a
	// template reference's kind and name), so those must be kept beside it.
	atomic []string
	// withheld fields may carry credentials (file contents, commands, free-form k3s
	// options): they are never kept, only named (see withheld.go).
	withheld []string
}

// diffPart is the merge patch from plain, a conversion of this side's part, to part,
// the other side's, with rules applied; nil when there is nothing to keep. The
// withheld fields that differ are left out and returned by path.
func diffPart(plain, part any, rules partRules) (json.RawMessage, []string, error) {
	from, err := json.Marshal(plain)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding %s for the conversion patch: %w", rules.name, err)
	}
	to, err := json.Marshal(part)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding %s for the conversion patch: %w", rules.name, err)
	}
	raw, err := jsonpatch.CreateMergePatch(from, to)
	if err != nil {
		return nil, nil, fmt.Errorf("computing the %s conversion patch: %w", rules.name, err)
	}
	patch, err := decodeObject(raw)
	if err != nil {
		return nil, nil, err
	}
	if len(patch) == 0 {
		return nil, nil, nil
	}
	fromDoc, err := decodeObject(from)
	if err != nil {
		return nil, nil, err
	}
	toDoc, err := decodeObject(to)
	if err != nil {
		return nil, nil, err
	}
	for _, path := range rules.atomic {
		if _, ok := lookup(patch, path); ok {
			setPath(patch, path, wholeValue(fromDoc, toDoc, path))
		}
	}
	var withheld []string
	for _, path := range rules.withheld {
		if _, ok := lookup(patch, path); ok {
			deletePath(patch, path)
			withheld = append(withheld, path)
		}
	}
	if len(patch) == 0 {
		return nil, withheld, nil
	}
	b, err := json.Marshal(patch)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the %s conversion patch: %w", rules.name, err)
	}
	return b, withheld, nil
}

// applyPatch sets into to base with patch applied.
func applyPatch[T any](base *T, patch json.RawMessage, into *T) error {
	doc, err := json.Marshal(base)
	if err != nil {
		return fmt.Errorf("encoding for the conversion patch: %w", err)
	}
	if len(patch) > 0 {
		if doc, err = jsonpatch.MergePatch(doc, patch); err != nil {
			return fmt.Errorf("applying the conversion patch: %w", err)
		}
	}
	var out T
	if err := json.Unmarshal(doc, &out); err != nil {
		return fmt.Errorf("reading the patched part: %w", err)
	}
	*into = out
	return nil
}

// wholeValue is a merge patch value that makes the field at path exactly to's: to's
// value, with nulls for the keys only from's has (a merge patch merges objects).
func wholeValue(from, to map[string]any, path string) any {
	want, ok := lookup(to, path)
	if !ok {
		return nil
	}
	wantObj, isObj := want.(map[string]any)
	have, _ := lookup(from, path)
	haveObj, hadObj := have.(map[string]any)
	if !isObj || !hadObj {
		return want
	}
	whole := make(map[string]any, len(wantObj))
	for k := range haveObj {
		whole[k] = nil
	}
	for k, v := range wantObj {
		whole[k] = v
	}
	return whole
}

// decodeObject reads a JSON object keeping numbers as written (int64 fields must not
// go through float64).
func decodeObject(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	m := map[string]any{}
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("reading a conversion patch: %w", err)
	}
	return m, nil
}

// Paths are JSON field names joined by dots, within one part.

func lookup(doc map[string]any, path string) (any, bool) {
	var cur any = doc
	for _, key := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[key]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// setPath sets the value at path, making the objects on the way.
func setPath(doc map[string]any, path string, value any) {
	keys := strings.Split(path, ".")
	m := doc
	for _, key := range keys[:len(keys)-1] {
		next, ok := m[key].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[key] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = value
}

// deletePath removes the value at path and then the objects on the way that it
// leaves empty (an empty object in a merge patch changes nothing). Other empty
// objects stay: they set a pointer that was nil.
func deletePath(doc map[string]any, path string) {
	keys := strings.Split(path, ".")
	parents := []map[string]any{doc}
	for _, key := range keys[:len(keys)-1] {
		next, ok := parents[len(parents)-1][key].(map[string]any)
		if !ok {
			return
		}
		parents = append(parents, next)
	}
	for i := len(keys) - 1; i >= 0; i-- {
		delete(parents[i], keys[i])
		if i > 0 && len(parents[i]) > 0 {
			return
		}
	}
}
