package chaos

import (
	"fmt"
	"sync"
)

// checker is one invariant, checked while the scenario runs.
type checker interface {
	// name says what the checker guards, for the summary.
	name() string
	// counts returns how many checks it made and what it found wrong.
	counts() (checks int64, problems []string)
}

// tally is what every checker keeps: its checks and its findings.
type tally struct {
	mu       sync.Mutex
	checks   int64
	problems []string
}

// check counts one check, and records a problem when ok is false.
func (t *tally) check(ok bool, format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.checks++
	if !ok && len(t.problems) < 50 {
		t.problems = append(t.problems, fmt.Sprintf(format, args...))
	}
}

func (t *tally) counts() (int64, []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.checks, append([]string(nil), t.problems...)
}
