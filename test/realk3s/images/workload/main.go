// Command workload is the application image of the real-k3s test layer's scenarios:
// an HTTP server whose answer names the pod it runs in, so that a scenario can tell
// pods apart through a Service, and whose per-request log lines let it check that
// `kubectl logs` reaches the container through k3s.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Greeting is the fixed text of every answer.
const Greeting = "capk3s workload"

func main() {
	logger := log.New(os.Stdout, "", log.LstdFlags|log.LUTC)
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	hostname, err := os.Hostname()
	if err != nil {
		logger.Fatalf("hostname: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		logger.Printf("GET / from %s", r.RemoteAddr)
		_, _ = fmt.Fprintf(w, "%s on %s\n", Greeting, hostname)
	})
	srv := &http.Server{Addr: ":" + port, Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	// Listen before saying so: the start line means requests are answered.
	ln, err := net.Listen("tcp", srv.Addr)
	if err != nil {
		logger.Fatalf("listening: %v", err)
	}
	logger.Printf("workload started on :%s as %s", port, hostname)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Fatalf("serving: %v", err)
	}
	<-stopped
	logger.Printf("workload stopped")
}
