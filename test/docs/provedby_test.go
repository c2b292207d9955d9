package docs

import (
	"reflect"
	"testing"
)

func TestParseProvedBy(t *testing.T) {
	for _, tc := range []struct {
		name, cell string
		want       []Ref
		wantErr    bool
	}{
		{name: "no test", cell: "no test (guaranteed at compile time)"},
		{name: "one test", cell: "`test/release TestClusterctlInit`",
			want: []Ref{{Dir: "test/release", Test: "TestClusterctlInit"}}},
		{name: "later names take the directory before them",
			cell: "`internal/controlplane TestA`, `TestB`; `internal/webhooks/controlplane TestC`, `TestD`",
			want: []Ref{{Dir: "internal/controlplane", Test: "TestA"}, {Dir: "internal/controlplane", Test: "TestB"},
				{Dir: "internal/webhooks/controlplane", Test: "TestC"}, {Dir: "internal/webhooks/controlplane", Test: "TestD"}}},
		{name: "helpers belong to the test before them, other code spans are prose",
			cell: "`test/lifecycle TestL` (label; drain timeout in checkTemplate), `TestM` (name, `value`); `test/release TestR` (checkCRDs, checkRole); readinessGates: no test",
			want: []Ref{{Dir: "test/lifecycle", Test: "TestL", Helpers: []string{"checkTemplate"}}, {Dir: "test/lifecycle", Test: "TestM"},
				{Dir: "test/release", Test: "TestR", Helpers: []string{"checkCRDs", "checkRole"}}}},
		{name: "a test name outside a code span", cell: "`a TestA`, TestB", wantErr: true},
		{name: "a bare name with no directory before it", cell: "`TestA`", wantErr: true},
		{name: "two spaces", cell: "`internal/a  TestA`", wantErr: true},
		{name: "a name after the directory", cell: "`internal/a TestA TestB`", wantErr: true},
		{name: "a helper before any test", cell: "(checkA) `a TestA`", wantErr: true},
		{name: "unbalanced backticks", cell: "`a TestA", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProvedBy(tc.cell)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want an error: %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("refs %+v, want %+v", got, tc.want)
			}
		})
	}
}
