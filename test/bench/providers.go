package main

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/reconcilers/kubeadmconfig"
	"sigs.k8s.io/cluster-api/controlplane/kubeadm/reconcilers/kubeadmcontrolplane"
	"sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/capk3s/capk3s/internal/bootstrap"
	"github.com/capk3s/capk3s/internal/controlplane"
)

// provider is a bootstrap + control-plane provider pair under test.
type provider string

const (
	providerCapk3s provider = "capk3s"
	providerKCP    provider = "kcp"
)

func parseProvider(s string) (provider, error) {
	switch p := provider(s); p {
	case providerCapk3s, providerKCP:
		return p, nil
	}
	return "", fmt.Errorf("unknown provider %q: want %q or %q", s, providerCapk3s, providerKCP)
}

// controllers are the names of p's controllers, as controller-runtime names them (the
// lowercased kind), by which requests are attributed to the provider (attribution.go).
func (p provider) controllers() []string {
	switch p {
	case providerCapk3s:
		return []string{"kthreescontrolplane", "kthreesconfig"}
	case providerKCP:
		return []string{"kubeadmcontrolplane", "kubeadmconfig"}
	}
	return nil
}

// minPassInterval is the pacing of p's reconcilers that the run set: capk3s's is
// -capk3s-min-pass-interval; the kubeadm providers' is CAPI's, not a setting here.
func minPassInterval(p provider, s settings) time.Duration {
	if p == providerCapk3s {
		return s.Capk3sMinPassInterval
	}
	return 0
}

// setupProvider registers p's reconcilers on the harness's manager, each with the
// run's concurrency, the way its own main.go registers them.
func (h *harness) setupProvider(ctx context.Context, p provider, s settings) error {
	opts := controller.Options{MaxConcurrentReconciles: s.ProviderConcurrency}
	c := h.client()
	switch p {
	case providerCapk3s:
		paced := minPassInterval(p, s)
		if err := (&controlplane.Reconciler{Client: c, ClusterCache: h.clusterCache, MinPassInterval: paced}).SetupWithManager(ctx, h.mgr, opts); err != nil {
			return fmt.Errorf("KThreesControlPlane reconciler: %w", err)
		}
		if err := (&bootstrap.Reconciler{Client: c, MinPassInterval: paced}).SetupWithManager(ctx, h.mgr, opts); err != nil {
			return fmt.Errorf("KThreesConfig reconciler: %w", err)
		}
		return h.startK3sStandIn(ctx)
	case providerKCP:
		secretCachingClient, err := setup.CreateSecretCachingClient(h.mgr)
		if err != nil {
			return err
		}
		// The timeouts are the kubeadm control plane's own defaults.
		kcpOpts := opts
		kcpOpts.ReconciliationTimeout = 3 * time.Minute
		if err := (&kubeadmcontrolplane.Reconciler{
			Client:                      c,
			APIReader:                   h.mgr.GetAPIReader(),
			SecretCachingClient:         secretCachingClient,
			ClusterCache:                h.clusterCache,
			EtcdDialTimeout:             10 * time.Second,
			EtcdCallTimeout:             15 * time.Second,
			EtcdLogger:                  zap.NewNop(),
			RemoteConditionsGracePeriod: 5 * time.Minute,
		}).SetupWithManager(ctx, h.mgr, kcpOpts); err != nil {
			return fmt.Errorf("KubeadmControlPlane reconciler: %w", err)
		}
		if err := (&kubeadmconfig.Reconciler{
			Client:              c,
			SecretCachingClient: secretCachingClient,
			APIReader:           h.mgr.GetAPIReader(),
			ClusterCache:        h.clusterCache,
			TokenTTL:            kubeadmconfig.DefaultTokenTTL,
		}).SetupWithManager(ctx, h.mgr, opts); err != nil {
			return fmt.Errorf("KubeadmConfig reconciler: %w", err)
		}
		return nil
	}
	return fmt.Errorf("unknown provider %q", p)
}
