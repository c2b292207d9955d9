package webhooktest

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// LoadManifest reads one YAML object from path, replaces ${NAMESPACE} with
// namespace (as clusterctl fills a template's variables) and puts the object into
// that namespace.
func LoadManifest(t testing.TB, path, namespace string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(strings.ReplaceAll(string(raw), "${NAMESPACE}", namespace)), &obj.Object); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	obj.SetNamespace(namespace)
	return obj
}

// WarningRecorder collects the warnings that the apiserver returns, as kubectl
// prints them. It is safe for concurrent use.
type WarningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (r *WarningRecorder) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, text)
}

// Take returns the warnings recorded since the last call, sorted, and forgets them.
func (r *WarningRecorder) Take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.warnings
	r.warnings = nil
	slices.Sort(w)
	return w
}

// StrictClient is a client of cfg's apiserver whose writes ask for strict field
// validation, as kubectl apply does by default: a field the schema does not know
// fails the request instead of being dropped. Its warnings go to the returned
// recorder.
func StrictClient(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme) (client.Client, *WarningRecorder) {
	t.Helper()
	recorder := &WarningRecorder{}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = recorder
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return client.WithFieldValidation(c, client.FieldValidation("Strict")), recorder
}

// Move says where a field that a manifest sets is found once stored: under To, with
// value Value (nil: the value as written). Kept says it stays under its own path too.
type Move struct {
	To    string
	Value any
	Kept  bool
}

// Leaves flattens a JSON-like value to its leaves by path ("spec.files[0].path").
// Empty maps and lists are leaves, so that losing one is seen. Numbers are compared
// as JSON numbers: pass values that went through encoding/json (see JSONValue).
func Leaves(v any) map[string]any {
	out := map[string]any{}
	addLeaves("", v, out)
	return out
}

func addLeaves(path string, v any, out map[string]any) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			out[path] = v
		}
		for k, child := range v {
			p := k
			if path != "" {
				p = path + "." + k
			}
			addLeaves(p, child, out)
		}
	case []any:
		if len(v) == 0 {
			out[path] = v
		}
		for i, child := range v {
			addLeaves(path+"["+strconv.Itoa(i)+"]", child, out)
		}
	default:
		out[path] = v
	}
}

// JSONValue returns v as encoding/json decodes it into an any: the same numbers
// (float64) whatever v came from (YAML, an unstructured object, a typed object).
func JSONValue(t testing.TB, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// StoredDifferences compares what was stored with what was written: every leaf of
// written must be stored under its own path with its value, unless moves moves it
// (then it must be under the new path, and gone from the old one unless Kept), and
// the stored leaves are exactly those plus added (what defaulting fills in). It
// returns one line per difference, sorted; none means nothing was lost, changed or
// invented.
func StoredDifferences(written, stored map[string]any, moves map[string]Move, added map[string]any) []string {
	want := map[string]any{}
	for path, v := range written {
		m, moved := moves[path]
		if !moved || m.Kept {
			want[path] = v
		}
		if moved {
			if m.Value != nil {
				v = m.Value
			}
			want[m.To] = v
		}
	}
	for path, v := range added {
		want[path] = v
	}
	var diffs []string
	for path, v := range want {
		got, ok := stored[path]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: missing, want %v", path, v))
		case !reflect.DeepEqual(got, v):
			diffs = append(diffs, fmt.Sprintf("%s: stored %v, want %v", path, got, v))
		}
	}
	for path, v := range stored {
		if _, ok := want[path]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: stored %v, not expected (not written, or moved away)", path, v))
		}
	}
	slices.Sort(diffs)
	return diffs
}

// Prefixed returns the leaves under prefix (a path such as "spec"), keyed by full path.
func Prefixed(leaves map[string]any, prefix string) map[string]any {
	out := map[string]any{}
	for path, v := range leaves {
		if path == prefix || strings.HasPrefix(path, prefix+".") || strings.HasPrefix(path, prefix+"[") {
			out[path] = v
		}
	}
	return out
}
