package envtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	capisetup "sigs.k8s.io/cluster-api/core/setup"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// readyTimeout bounds how long RunManager waits for the webhook server and Ready.
const readyTimeout = 2 * time.Minute

// ManagerOptions are what tests vary between the managers they start.
type ManagerOptions struct {
	// Webhooks serves the webhooks that setup registers on WebhookServer, where the
	// installed webhook configurations send requests; the Environment must have been
	// started with Options.Webhooks. The manager is returned only once its webhook
	// server has started.
	Webhooks bool
	// Ready, if set, is polled after the manager has started, until it returns nil; the
	// manager is returned only then. Webhook tests use it to wait until the apiserver
	// really calls their webhooks: it loads the webhook configurations asynchronously
	// and admits everything unchecked until then.
	Ready func(ctx context.Context) error
	// WrapTransport, if set, wraps every request the manager makes (its client, API
	// reader and caches), so that a test can see what reaches the apiserver.
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// StartManager creates a manager on the environment, lets setup register controllers
// and webhooks, starts it and stops it when t ends. setup's ctx is the manager's: it
// ends when the manager stops.
//
// The manager is configured as the manager binaries configure theirs where that
// matters to tests (Secrets and ConfigMaps are read live, never cached, as
// internal/manager's client options say), with metrics and probes off, and with
// controller name validation off because tests start several managers in one process.
func (e *Environment) StartManager(t testing.TB, opts ManagerOptions, setup func(ctx context.Context, mgr ctrl.Manager) error) ctrl.Manager {
	t.Helper()
	mgr, stop, err := e.RunManager(opts, setup)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Logf("manager: %v", err)
		}
	})
	return mgr
}

// RunManager is StartManager for a manager that outlives one test (shared by a
// package, say): stop ends it and returns what Start returned. On error nothing is
// left running.
func (e *Environment) RunManager(opts ManagerOptions, setup func(ctx context.Context, mgr ctrl.Manager) error) (mgr ctrl.Manager, stop func() error, err error) {
	mgrOpts := ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Client:                 capisetup.ManagerClientOptions(),
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if opts.Webhooks {
		if len(e.env.WebhookInstallOptions.Paths) == 0 {
			return nil, nil, errors.New("manager with webhooks: the environment was started without Options.Webhooks")
		}
		mgrOpts.WebhookServer = e.WebhookServer()
	}
	cfg := e.Config
	if opts.WrapTransport != nil {
		cfg = rest.CopyConfig(cfg)
		cfg.Wrap(opts.WrapTransport)
	}
	if mgr, err = ctrl.NewManager(cfg, mgrOpts); err != nil {
		return nil, nil, fmt.Errorf("creating manager: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := setup(ctx, mgr); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("setting up manager: %w", err)
	}
	var startErr error
	stopped := make(chan struct{})
	go func() {
		startErr = mgr.Start(ctx)
		close(stopped)
	}()
	stop = func() error {
		cancel()
		<-stopped
		return startErr
	}
	if err := waitReady(mgr, opts, stopped); err != nil {
		return nil, nil, errors.Join(err, stop())
	}
	return mgr, stop, nil
}

// SharedManager is one manager for a whole test package, started by the first test
// that needs it (RunMain offers no hook between starting the apiserver and running
// the tests, and tests that need no manager should not wait for one) and never
// stopped: it runs until the test binary exits. The zero value is ready to use.
type SharedManager struct {
	once sync.Once
	err  error
}

// Start starts the manager with RunManager on the first call, and fails t, then and on
// every later call, if that start failed.
func (m *SharedManager) Start(t testing.TB, e *Environment, opts ManagerOptions, setup func(ctx context.Context, mgr ctrl.Manager) error) {
	t.Helper()
	m.once.Do(func() { _, _, m.err = e.RunManager(opts, setup) })
	if m.err != nil {
		t.Fatalf("starting the package's manager: %v", m.err)
	}
}

// waitReady polls until the webhook server (if any) has started and opts.Ready (if
// any) passes, failing early if the manager stops.
func waitReady(mgr ctrl.Manager, opts ManagerOptions, stopped <-chan struct{}) error {
	if !opts.Webhooks && opts.Ready == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	ready := func() error {
		if opts.Webhooks {
			if err := mgr.GetWebhookServer().StartedChecker()(&http.Request{}); err != nil {
				return err
			}
		}
		if opts.Ready != nil {
			return opts.Ready(ctx)
		}
		return nil
	}
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-stopped:
			// stop reports why.
			return errors.New("manager stopped before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("manager not ready after %s: %w", readyTimeout, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
