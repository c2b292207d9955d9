package envtest

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"time"
)

// CutWorkloadAPI makes the workload kube-apiserver on port unreachable for d, as a
// network partition would: the process is stopped (SIGSTOP), so connections open but
// nothing answers and every client runs into its timeouts; then it resumes (SIGCONT)
// with its state intact. The apiserver must be a child of this process, as the
// simulator's are. It resumes early if ctx ends.
func CutWorkloadAPI(ctx context.Context, port int, d time.Duration) error {
	pid, _, err := findChild("kube-apiserver", "--secure-port="+strconv.Itoa(port))
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("stopping kube-apiserver %d: %w", pid, err)
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("resuming kube-apiserver %d: %w", pid, err)
	}
	return nil
}
