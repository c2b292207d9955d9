package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
)

// servePprof serves the benchmark process's pprof endpoints (goroutines, heap, CPU)
// on addr, for looking inside a run that stalls or slows down while it runs; "" serves
// nothing. The listener lives as long as the process.
func servePprof(addr string) error {
	if addr == "" {
		return nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("-pprof-addr: %w", err)
	}
	go func() {
		if err := http.Serve(l, mux); err != nil && !errors.Is(err, net.ErrClosed) { //nolint:gosec // a local debugging endpoint for one run, no timeouts needed
			fmt.Printf("bench: pprof server: %v\n", err)
		}
	}()
	return nil
}
