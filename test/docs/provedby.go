package docs

import (
	"fmt"
	"regexp"
	"strings"
)

// A Ref is a test a "proved by" cell names, `<package dir> <TestName>`, with the
// helpers (functions named check…) the cell names after it, which do the asserting
// inside that test.
type Ref struct {
	Dir, Test string
	Helpers   []string
}

var (
	// `internal/controlplane TestUpToDateReason`
	qualifiedTest = regexp.MustCompile(`^([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*) (Test[A-Z0-9_]\w*)$`)
	// `TestUntilRolloutAfter`, after a qualified one in the same cell.
	bareTest = regexp.MustCompile(`^Test[A-Z0-9_]\w*$`)
	// Anything that looks like a test name, to refuse the ones written otherwise.
	testLike = regexp.MustCompile(`\bTest[A-Z0-9_]\w*`)
	helper   = regexp.MustCompile(`\bcheck[A-Z]\w*`)
)

// ParseProvedBy reads the tests a "proved by" cell names. Test names are code spans:
// `dir TestName`, or `TestName` alone, which takes the directory of the test before
// it. Helper names (check…) in the text belong to the test before them. A test name
// written any other way (outside a code span, with a stray space, with no directory
// to inherit) is an error, so that no name goes unchecked. Other code spans (field
// names, values) are prose.
func ParseProvedBy(cell string) ([]Ref, error) {
	parts := strings.Split(cell, "`")
	if len(parts)%2 == 0 {
		return nil, fmt.Errorf("unbalanced backticks in %q", cell)
	}
	var refs []Ref
	for i, part := range parts {
		if i%2 == 0 { // text
			if m := testLike.FindString(part); m != "" {
				return nil, fmt.Errorf("test name %s outside a code span: write `<package dir> %s`", m, m)
			}
			for _, h := range helper.FindAllString(part, -1) {
				if len(refs) == 0 {
					return nil, fmt.Errorf("helper %s before any test", h)
				}
				refs[len(refs)-1].Helpers = append(refs[len(refs)-1].Helpers, h)
			}
			continue
		}
		span := part
		switch m := qualifiedTest.FindStringSubmatch(span); {
		case m != nil:
			refs = append(refs, Ref{Dir: m[1], Test: m[2]})
		case bareTest.MatchString(span):
			if len(refs) == 0 {
				return nil, fmt.Errorf("`%s` has no package directory, and no test before it gives one", span)
			}
			refs = append(refs, Ref{Dir: refs[len(refs)-1].Dir, Test: span})
		case testLike.MatchString(span):
			return nil, fmt.Errorf("`%s` is not `<package dir> <TestName>` or `<TestName>`", span)
		}
	}
	return refs, nil
}
