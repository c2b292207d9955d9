package webhooktest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fuzzFunc is a fuzz target's declaration, as `go test -fuzz` finds them.
var fuzzFunc = regexp.MustCompile(`(?m)^func (Fuzz\w*)\(\w+ \*testing\.F\)`)

// TestFuzzTargetsListed keeps hack/fuzz.sh's list of targets, which `make fuzz` and
// the bounded step of `make test` run, the same as the fuzz targets in the repository:
// a new target missing from the list would never be fuzzed.
func TestFuzzTargetsListed(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(root, "hack", "fuzz.sh"), "--list").Output()
	if err != nil {
		t.Fatalf("hack/fuzz.sh --list: %v", err)
	}
	var listed []string
	for line := range strings.Lines(string(out)) {
		pkg, target, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			t.Fatalf("hack/fuzz.sh --list: %q is not \"package target\"", line)
		}
		listed = append(listed, strings.TrimPrefix(pkg, "./")+" "+target)
	}

	var found []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(src), -1) {
			found = append(found, filepath.ToSlash(rel)+" "+m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 {
		t.Fatal("no fuzz target found in the repository: the search is broken")
	}
	slices.Sort(found)
	slices.Sort(listed)
	for _, f := range found {
		if !slices.Contains(listed, f) {
			t.Errorf("fuzz target %s is not in hack/fuzz.sh's list: add it to TARGETS", f)
		}
	}
	for _, l := range listed {
		if !slices.Contains(found, l) {
			t.Errorf("hack/fuzz.sh lists %s, which does not exist", l)
		}
	}
}
