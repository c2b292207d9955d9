package minisystemd

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Verb of the hidden helper that applies resource limits in the child and
// then execs the real command, so the limit never touches the supervisor's
// own (the machine lacks CAP_SYS_RESOURCE, so a lowered hard limit could not
// be raised back).
const verbExecLimits = "exec-limits"

// startCommand starts one command of a unit with the service environment,
// its output appended to the unit's log, stdin from /dev/null, cwd /, in a
// new session (so it gets no terminal signals and its processes can be found
// by session id).
func (m *Manager) startCommand(def *Unit, argv []string, env map[string]string, envList []string) (int, <-chan syscall.WaitStatus, error) {
	argv = expandCommand(argv, env)
	path, err := lookPath(argv[0], env["PATH"])
	if err != nil {
		return 0, nil, err
	}
	if def.LimitNOFILE != nil && m.self != "" {
		l := def.LimitNOFILE
		helper := []string{m.self, verbExecLimits, "--nofile",
			strconv.FormatUint(l[0], 10) + ":" + strconv.FormatUint(l[1], 10), "--", path}
		argv = append(helper, argv...)
		path = m.self
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return 0, nil, fmt.Errorf("opening %s: %w", os.DevNull, err)
	}
	defer func() { _ = devnull.Close() }()
	out, err := os.OpenFile(m.UnitLogPath(def.Name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 0, nil, fmt.Errorf("opening unit log: %w", err)
	}
	defer func() { _ = out.Close() }()
	attr := &syscall.ProcAttr{
		Dir:   "/",
		Env:   envList,
		Files: []uintptr{devnull.Fd(), out.Fd(), out.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	}
	pid, ch, err := m.reaper.spawn(path, argv, attr)
	if err != nil {
		return 0, nil, fmt.Errorf("executing %s: %w", path, err)
	}
	return pid, ch, nil
}

// lookPath resolves a command the way systemd does for a name without a
// slash: through the fixed service PATH.
func lookPath(name, pathEnv string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("executable %q not found in %s", name, pathEnv)
}

// execLimits is the helper's body: `exec-limits --nofile soft:hard -- path argv...`.
// If the hard limit cannot be raised (no CAP_SYS_RESOURCE), it settles for
// the current hard limit rather than refusing to start the service.
func execLimits(args []string) int {
	if len(args) < 5 || args[0] != "--nofile" || args[2] != "--" {
		fmt.Fprintln(os.Stderr, "minisystemd exec-limits: usage: exec-limits --nofile SOFT:HARD -- PATH ARGV...")
		return 1
	}
	l, err := parseLimit(args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "minisystemd exec-limits: %v\n", err)
		return 1
	}
	want := syscall.Rlimit{Cur: l[0], Max: l[1]}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		var cur syscall.Rlimit
		if gerr := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &cur); gerr == nil {
			fallback := syscall.Rlimit{Cur: min(want.Cur, cur.Max), Max: cur.Max}
			if ferr := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &fallback); ferr == nil {
				fmt.Fprintf(os.Stderr, "minisystemd: LimitNOFILE=%d:%d not allowed (%v), using %d:%d\n",
					want.Cur, want.Max, err, fallback.Cur, fallback.Max)
			}
		}
	}
	path, argv := args[3], args[4:]
	err = syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "minisystemd exec-limits: exec %s: %v\n", path, err)
	return 1
}
