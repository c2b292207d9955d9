package webhooktest

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// UpdateDocs makes the refused-input tests rewrite their tables in
// docs/troubleshooting.md from what the apiserver answered, instead of failing when
// the documented messages differ.
var UpdateDocs = flag.Bool("update-docs", false, "rewrite the refused-input tables of docs/troubleshooting.md")

// troubleshootingDoc is docs/troubleshooting.md from a package two levels under
// internal/ (internal/webhooks/<name>).
const troubleshootingDoc = "../../../docs/troubleshooting.md"

// RefusedInput is one row of the refused-input table of docs/troubleshooting.md: an
// input a webhook refuses, and the message the user gets.
type RefusedInput struct {
	// Kind is the kind written to (the scale subresource's rows say so).
	Kind string
	// Op is create, update (of a valid stored object) or scale (kubectl scale).
	Op string
	// Field is the field the message names.
	Field string
	// Example is a JSON merge patch on a valid object (create, update), or the new
	// replica count (scale).
	Example string
	// Message is what the apiserver answered: what kubectl prints after "Error
	// from server (Invalid): error when creating ...:". The test fills it in.
	Message string
}

func (r RefusedInput) row() string {
	cell := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }
	return fmt.Sprintf("| %s | %s | `%s` | `%s` | %s |", r.Kind, r.Op, r.Field, cell(r.Example), cell(r.Message))
}

// CheckRefusedInputTable compares rows with the table between the markers
// "<!-- refused-input:NAME -->" and "<!-- /refused-input:NAME -->" in
// docs/troubleshooting.md: every row must be there, with its message exactly as the
// apiserver gave it, and the table must hold no other row. With -update-docs it
// rewrites the table instead.
func CheckRefusedInputTable(t *testing.T, name string, rows []RefusedInput) {
	t.Helper()
	for _, r := range rows {
		if !strings.Contains(r.Message, r.Field) {
			t.Errorf("%s %s %s: the message does not name the field %s: %s", r.Op, r.Kind, r.Example, r.Field, r.Message)
		}
	}
	begin, end := "<!-- refused-input:"+name+" -->\n", "<!-- /refused-input:"+name+" -->"
	doc, err := os.ReadFile(troubleshootingDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no table between %q and %q", filepath.Base(troubleshootingDoc), strings.TrimSpace(begin), end)
	}
	var want strings.Builder
	want.WriteString("| kind | operation | field | input | message |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		want.WriteString(r.row() + "\n")
	}
	got := text[i+len(begin) : j]
	if got == want.String() {
		return
	}
	if *UpdateDocs {
		text = text[:i+len(begin)] + want.String() + text[j:]
		if err := os.WriteFile(troubleshootingDoc, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the %s table of %s", name, troubleshootingDoc)
		return
	}
	documented := map[string]bool{}
	for line := range strings.Lines(got) {
		documented[strings.TrimSuffix(line, "\n")] = true
	}
	tested := map[string]bool{}
	for _, r := range rows {
		tested[r.row()] = true
		if !documented[r.row()] {
			t.Errorf("docs/troubleshooting.md lacks this row, or documents another message for the input:\n%s", r.row())
		}
	}
	for line := range documented {
		if !tested[line] && !strings.HasPrefix(line, "| kind ") && !strings.HasPrefix(line, "| --- ") {
			t.Errorf("docs/troubleshooting.md documents a row no test checks:\n%s", line)
		}
	}
	t.Errorf("the %s table of docs/troubleshooting.md is not what the webhooks answer (order or rows); run the test with -update-docs to rewrite it", name)
}

// MergePatch applies a JSON merge patch (RFC 7386) to the JSON form of obj and
// returns the result as a JSON object, as `kubectl patch --type merge` would write it.
func MergePatch(t testing.TB, obj any, patch string) map[string]any {
	t.Helper()
	var doc, p map[string]any
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(patch), &p); err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	return mergeInto(doc, p)
}

func mergeInto(doc, patch map[string]any) map[string]any {
	if doc == nil {
		doc = map[string]any{}
	}
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(doc, k)
		case map[string]any:
			sub, _ := doc[k].(map[string]any)
			doc[k] = mergeInto(sub, pv)
		default:
			doc[k] = v
		}
	}
	return doc
}
