package images

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPauseReapsOrphans runs pause as PID 1 of a new PID namespace, as in a pod that
// shares its PID namespace, leaves an orphan in that namespace and checks that pause
// reaps it once it exits instead of leaving a zombie.
func TestPauseReapsOrphans(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a new PID namespace")
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Skip("needs nsenter to start a process in the PID namespace")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	binary, err := buildProgram(ctx, "pause")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	pause := exec.Command(path)
	// Pdeathsig: should the test process die, pause (and with it the namespace's
	// processes) goes too.
	pause.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	stderr, err := pause.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := pause.Start(); err != nil {
		t.Skipf("cannot start a process in a new PID namespace here: %v", err)
	}
	defer func() { _ = pause.Process.Kill(); _ = pause.Wait() }()
	if _, err := bufio.NewReader(stderr).ReadString('\n'); err != nil {
		t.Fatalf("pause did not start: %v", err)
	}

	// sh starts inside the namespace, backgrounds a cat that waits on a FIFO and exits
	// at once: the cat's parent is gone, so the kernel gives it to the namespace's
	// PID 1. The cat exits when the test writes to the FIFO.
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	orphan := exec.Command(nsenter, "--target", strconv.Itoa(pause.Process.Pid), "--pid", "--",
		"/bin/sh", "-c", `cat "$1" >/dev/null 2>&1 & exit 0`, "sh", fifo)
	orphan.WaitDelay = 5 * time.Second // in case the cat held sh's output open
	if out, err := orphan.CombinedOutput(); err != nil {
		t.Fatalf("starting the orphan: %v\n%s", err, out)
	}
	children := func() []string { return childrenOf(t, pause.Process.Pid) }
	deadline := time.Now().Add(5 * time.Second)
	for len(children()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the orphan never became pause's child")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.WriteFile(fifo, []byte("exit\n"), 0o600); err != nil {
		t.Fatalf("ending the orphan: %v", err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		left := children()
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pause's children still there after the orphan ended: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := pause.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(pause); err != nil {
		t.Fatalf("pause after SIGTERM: %v, want exit status 0", err)
	}
}

// childrenOf lists the processes whose parent is pid, each as "pid state".
func childrenOf(t *testing.T, pid int) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) >= 2 && fields[1] == strconv.Itoa(pid) {
			out = append(out, fmt.Sprintf("%s %s", e.Name(), fields[0]))
		}
	}
	return out
}
