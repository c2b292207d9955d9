package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// apiserverProfileSeconds is how long the kube-apiserver's CPU profile runs.
const apiserverProfileSeconds = 30

// profileAPIServer waits until after, then writes a CPU profile of the benchmark's
// kube-apiserver (its /debug/pprof endpoint, on by default, read as the harness's
// admin user) to path. Where the management API server spends its cores is the
// question at a thousand clusters, when it and not the controllers is the limit.
// It runs in the background; the returned channel gives its outcome.
func profileAPIServer(ctx context.Context, cfg *rest.Config, path string, after time.Duration) <-chan error {
	done := make(chan error, 1)
	if path == "" {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		select {
		case <-time.After(after):
		case <-ctx.Done():
			return
		}
		done <- writeAPIServerProfile(ctx, cfg, path)
	}()
	return done
}

func writeAPIServerProfile(ctx context.Context, cfg *rest.Config, path string) error {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("-apiserver-cpuprofile: %w", err)
	}
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(cfg.Host, "/"), apiserverProfileSeconds)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("-apiserver-cpuprofile: %w", err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("-apiserver-cpuprofile: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("-apiserver-cpuprofile: %s answered %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("-apiserver-cpuprofile: %w", err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return fmt.Errorf("-apiserver-cpuprofile: %w", err)
	}
	return f.Close()
}
