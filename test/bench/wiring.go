package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	clustercontroller "sigs.k8s.io/cluster-api/core/reconcilers/cluster"
	machinecontroller "sigs.k8s.io/cluster-api/core/reconcilers/machine"
	machinedeploymentcontroller "sigs.k8s.io/cluster-api/core/reconcilers/machinedeployment"
	machinesetcontroller "sigs.k8s.io/cluster-api/core/reconcilers/machineset"
	"sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/test/infrastructure/container"
	infracontrollers "sigs.k8s.io/cluster-api/test/infrastructure/docker/controllers"
	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
	inmemoryserver "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/server"
	"sigs.k8s.io/cluster-api/util/index"
	"sigs.k8s.io/cluster-api/util/secret"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// settings are the knobs both providers share in a run: the fairness rules of
// docs/performance.md are that everything here is the same for both.
type settings struct {
	// QPS and Burst of the manager's management API client (CAPI's defaults: 100/200).
	QPS   float64
	Burst int
	// ClusterCacheQPS and ClusterCacheBurst of the workload cluster clients (20/30).
	ClusterCacheQPS   float64
	ClusterCacheBurst int
	// ConnectionRetry is the ClusterCache's retry interval for a workload cluster it
	// could not connect to yet (CAPI's default is 30s).
	ConnectionRetry time.Duration
	// ProviderConcurrency is the provider's reconcilers' concurrency.
	ProviderConcurrency int
	// SyncPeriod of the manager's cache (CAPI's default, 10m).
	SyncPeriod time.Duration
	// Capk3sMinPassInterval paces capk3s's two reconcilers (their MinPassInterval, the
	// managers' --min-pass-interval; 0, their default, is off). The one setting that is
	// not the same for both: it measures capk3s with the pacing the kubeadm providers
	// always have (CAPI's ReconcilerRateLimiting, one pass per object per second).
	Capk3sMinPassInterval time.Duration
}

// harness is one process's management plane: a manager on the test apiserver with CAPI
// core, the in-memory backend and one provider.
type harness struct {
	mgr          ctrl.Manager
	clusterCache clustercache.ClusterCache
	inMemory     inmemoryruntime.Manager
	counter      *requestCounter
	standIn      standInClusters
}

// newHarness creates the manager (not started). Its cache is CAPI core's
// (setup.ManagerCacheOptions), except that cached cluster Secrets keep the data of
// every "<cluster>-<purpose>" Secret, not only the kubeconfig: the kubeadm control
// plane's own manager keeps those (it reads the CAs from its cache), and one cache
// must serve both providers' runs alike.
func newHarness(ctx context.Context, base *rest.Config, scheme *runtime.Scheme, s settings) (*harness, error) {
	counter := newRequestCounter()
	cfg := counter.wrap(base)
	cfg.QPS, cfg.Burst = float32(s.QPS), s.Burst
	cfg.UserAgent = "capk3s-bench"
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{
			CacheSyncTimeout: 5 * time.Minute,
			// Thousands of objects are made by one process: controller names repeat
			// across the providers' runs only, never within one.
			SkipNameValidation: ptr.To(true),
		},
		Cache:  cacheOptions(scheme, s.SyncPeriod),
		Client: setup.ManagerClientOptions(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := index.AddDefaultIndexes(ctx, mgr); err != nil {
		return nil, fmt.Errorf("indexes: %w", err)
	}
	secretCachingClient, err := setup.CreateSecretCachingClient(mgr)
	if err != nil {
		return nil, fmt.Errorf("secret caching client: %w", err)
	}
	cc, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: secretCachingClient,
		Cache:        setup.ClusterCacheCacheOptions(),
		Client:       setup.ClusterCacheClientOptions("capk3s-bench", float32(s.ClusterCacheQPS), s.ClusterCacheBurst),
	}, controller.Options{MaxConcurrentReconciles: 100})
	if err != nil {
		return nil, fmt.Errorf("cluster cache: %w", err)
	}
	if r, ok := cc.(interface{ SetConnectionCreationRetryInterval(time.Duration) }); ok && s.ConnectionRetry > 0 {
		r.SetConnectionCreationRetryInterval(s.ConnectionRetry)
	}
	h := &harness{mgr: mgr, clusterCache: cc, counter: counter}
	if err := h.setupCore(ctx); err != nil {
		return nil, err
	}
	if err := h.setupInMemory(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

func cacheOptions(scheme *runtime.Scheme, syncPeriod time.Duration) ctrlcache.Options {
	opts := setup.ManagerCacheOptions(scheme, "capk3s-bench", "", syncPeriod)
	req, err := labels.NewRequirement(clusterv1.ClusterNameLabel, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	// ByObject is keyed by object pointer: CAPI's options already hold an entry for
	// Secrets under a pointer of their own, so a second &corev1.Secret{} key would add
	// a second entry for the same kind, and which one the cache applies depends on map
	// order, a coin flip per process. When CAPI's won (it drops the data of every
	// Secret but the kubeconfig), the kubeadm control plane found its CAs empty
	// ("missing data for key tls.crt") on every pass and never made a Machine: the
	// kubeadm side's stalls. The entry is replaced in place instead.
	for obj := range opts.ByObject {
		if _, isSecret := obj.(*corev1.Secret); isSecret {
			delete(opts.ByObject, obj)
		}
	}
	opts.ByObject[&corev1.Secret{}] = ctrlcache.ByObject{
		Label:     labels.NewSelector().Add(*req),
		Transform: keepClusterSecretData,
	}
	return opts
}

// keepClusterSecretData is the cache's Secret transform: managed fields go, and the
// data of every Secret but a cluster's "<cluster>-<purpose>" ones and its kubeconfig.
func keepClusterSecretData(in any) (any, error) {
	if s, ok := in.(*corev1.Secret); ok {
		s.SetManagedFields(nil)
		if !secret.HasPurposeSuffix(s.Name) && !strings.HasSuffix(s.Name, "-"+string(secret.Kubeconfig)) {
			s.Data = nil
		}
	}
	return in, nil
}

// setupCore registers CAPI core's reconcilers with the concurrency and grace periods
// of CAPI's own main.go.
func (h *harness) setupCore(ctx context.Context) error {
	c, r, cc := h.mgr.GetClient(), h.mgr.GetAPIReader(), h.clusterCache
	conc := func(n int) controller.Options { return controller.Options{MaxConcurrentReconciles: n} }
	for _, step := range []struct {
		name  string
		setup func() error
	}{
		{"Cluster", func() error {
			return (&clustercontroller.Reconciler{Client: c, APIReader: r, ClusterCache: cc, RemoteConnectionGracePeriod: 50 * time.Second}).
				SetupWithManager(ctx, h.mgr, conc(50))
		}},
		{"Machine", func() error {
			return (&machinecontroller.Reconciler{Client: c, APIReader: r, ClusterCache: cc, RemoteConditionsGracePeriod: 5 * time.Minute}).
				SetupWithManager(ctx, h.mgr, conc(100))
		}},
		{"MachineSet", func() error {
			return (&machinesetcontroller.Reconciler{Client: c, APIReader: r, ClusterCache: cc}).SetupWithManager(ctx, h.mgr, conc(50))
		}},
		{"MachineDeployment", func() error {
			return (&machinedeploymentcontroller.Reconciler{Client: c, APIReader: r}).SetupWithManager(ctx, h.mgr, conc(50))
		}},
	} {
		if err := step.setup(); err != nil {
			return fmt.Errorf("CAPI %s reconciler: %w", step.name, err)
		}
	}
	return nil
}

// setupInMemory registers the in-memory infrastructure backend: DevCluster and
// DevMachine reconcilers (concurrency 50, as the backend's own main.go), whose workload clusters are in-memory API servers on local
// listeners.
func (h *harness) setupInMemory(ctx context.Context) error {
	h.inMemory = inmemoryruntime.NewManager(inMemoryScheme())
	if err := h.inMemory.Start(ctx); err != nil {
		return fmt.Errorf("starting the in-memory manager: %w", err)
	}
	mux, err := inmemoryserver.NewWorkloadClustersMux(h.inMemory, "127.0.0.1")
	if err != nil {
		return fmt.Errorf("workload clusters mux: %w", err)
	}
	// The Dev reconcilers also drive a Docker backend and insist on a container
	// runtime; in-memory machines never call it, so the package's fake runtime serves.
	runtime, err := container.NewFakeClient()
	if err != nil {
		return err
	}
	c := h.mgr.GetClient()
	if err := (&infracontrollers.DevMachineReconciler{Client: c, ContainerRuntime: runtime, ClusterCache: h.clusterCache, InMemoryManager: h.inMemory, APIServerMux: mux}).
		SetupWithManager(ctx, h.mgr, controller.Options{MaxConcurrentReconciles: 50}); err != nil {
		return fmt.Errorf("DevMachine reconciler: %w", err)
	}
	if err := (&infracontrollers.DevClusterReconciler{Client: c, ContainerRuntime: runtime, InMemoryManager: h.inMemory, APIServerMux: mux}).
		SetupWithManager(ctx, h.mgr, controller.Options{MaxConcurrentReconciles: 50}); err != nil {
		return fmt.Errorf("DevCluster reconciler: %w", err)
	}
	return nil
}

// client is the manager's client, for the provider reconcilers.
func (h *harness) client() client.Client { return h.mgr.GetClient() }
