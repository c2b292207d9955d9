package webhooktest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteCorpusEntry writes values as the seed corpus file testdata/fuzz/<target>/<name>
// in the format `go test -fuzz` reads, objects as their JSON. It is how the seed
// corpora were written from the packages' valid test specs (see the packages'
// TestWriteFuzzSeeds, run with -write-fuzz-seeds).
func WriteCorpusEntry(t testing.TB, target, name string, values ...any) {
	t.Helper()
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, v := range values {
		switch x := v.(type) {
		case bool:
			fmt.Fprintf(&b, "bool(%v)\n", x)
		case int32:
			fmt.Fprintf(&b, "int32(%d)\n", x)
		case string:
			fmt.Fprintf(&b, "string(%q)\n", x)
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", x)
		default:
			raw, err := json.Marshal(x)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "[]byte(%q)\n", raw)
		}
	}
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
