// Command pause is the sandbox ("pause") container of the real-k3s test layer's
// pods: it holds the pod's namespaces open, doing nothing, until it is told to stop.
// When the pod shares one PID namespace it is PID 1 there, so it reaps the
// orphaned children that the kernel hands to it.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	// Until Notify, the Go runtime would die of SIGTERM; this line says it no longer
	// does (a sandbox's output is discarded).
	_, _ = os.Stderr.WriteString("pause: waiting for SIGTERM or SIGINT\n")
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		os.Exit(0)
	}
}

// reap collects every child that has exited; signals coalesce, so one SIGCHLD may
// stand for several children.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
