package webhooktest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFuzzVerdict pins how hack/fuzz.sh tells a finding from Go's fuzzing
// coordinator failing on its own -fuzztime deadline (go.dev/issue/75804): the second
// failed a CI run of `make test` with nothing to replay, the first must always fail.
func TestFuzzVerdict(t *testing.T) {
	script, err := filepath.Abs("../../hack/fuzz.sh")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, log, want string
	}{{
		name: "the coordinator's deadline race, seen in CI",
		log: `fuzz: elapsed: 0s, gathering baseline coverage: 0/412 completed
--- FAIL: FuzzSample (5.03s)
    context deadline exceeded
FAIL
exit status 1
FAIL	example.test/pkg	11.2s
`,
		want: "race",
	}, {
		name: "an input that fails the target",
		log: `fuzz: elapsed: 0s, execs: 8 (267/sec), new interesting: 0 (total: 1)
--- FAIL: FuzzSample (0.03s)
    --- FAIL: FuzzSample (0.00s)
        sample_test.go:6: rejected a valid object
    
    Failing input written to testdata/fuzz/FuzzSample/0a1b2c3d4e5f6071
    To re-run:
    go test -run=FuzzSample/0a1b2c3d4e5f6071
FAIL
`,
		want: "finding",
	}, {
		name: "an input whose failure mentions a deadline is still a finding",
		log: `--- FAIL: FuzzSample (2.10s)
    --- FAIL: FuzzSample (0.00s)
        sample_test.go:9: context deadline exceeded
    
    Failing input written to testdata/fuzz/FuzzSample/99aa88bb77cc66dd
FAIL
`,
		want: "finding",
	}, {
		name: "a seed corpus entry that fails while fuzzing",
		log: `--- FAIL: FuzzSample (0.40s)
    failure while testing seed corpus entry: FuzzSample/seed#3
    fuzz: elapsed: 0s, gathering baseline coverage: 3/12 completed
    --- FAIL: FuzzSample (0.00s)
        sample_test.go:6: rejected a valid object
FAIL
`,
		want: "finding",
	}, {
		name: "a worker that crashed",
		log: `--- FAIL: FuzzSample (4.90s)
    fuzzing process hung or terminated unexpectedly: exit status 2
FAIL
`,
		want: "failed",
	}, {
		name: "a deadline line under another target's failure",
		log: `--- FAIL: FuzzOther (5.01s)
    context deadline exceeded
FAIL
`,
		want: "failed",
	}, {
		name: "a build failure",
		log: `# example.test/pkg
./sample_test.go:4:2: undefined: missing
FAIL	example.test/pkg [build failed]
`,
		want: "failed",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "FuzzSample.log")
			if err := os.WriteFile(log, []byte(tc.log), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(script, "--verdict", "FuzzSample", log).Output()
			if err != nil {
				t.Fatalf("hack/fuzz.sh --verdict: %v", err)
			}
			if got := strings.TrimSpace(string(out)); got != tc.want {
				t.Errorf("verdict = %q, want %q", got, tc.want)
			}
		})
	}
}
