package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// creators is how many clusters are created at once: enough that creating 1,000
// clusters takes seconds, not minutes, and far fewer than the reconcilers' workers.
const creators = 8

// measure runs provider p once on a fresh control plane and returns what it measured.
func measure(ctx context.Context, p provider, o options, logf func(string)) (_ *result, retErr error) {
	ctrl.SetLogger(benchLogger(o.logErrors))
	env, err := startEnvironment()
	if err != nil {
		return nil, err
	}
	defer func() { retErr = errors.Join(retErr, env.Stop()) }()
	scheme := benchScheme()
	// The harness's own client, on a connection that is not counted.
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}

	mgrCtx, stopManager := context.WithCancel(ctx)
	var mgrDone sync.WaitGroup
	defer func() { stopManager(); mgrDone.Wait() }()
	h, err := newHarness(mgrCtx, env.Config, scheme, o.settings)
	if err != nil {
		return nil, err
	}
	if err := h.setupProvider(mgrCtx, p, o.settings); err != nil {
		return nil, err
	}
	mgrErr := make(chan error, 1)
	mgrDone.Add(1)
	go func() { defer mgrDone.Done(); mgrErr <- h.mgr.Start(mgrCtx) }()
	if !h.mgr.GetCache().WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("manager cache did not sync")
	}

	const namespace = "bench"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return nil, err
	}
	ready, err := startReadiness(mgrCtx, env.Config, scheme, namespace, o.shape)
	if err != nil {
		return nil, err
	}
	if o.traceWrites {
		var w io.Writer = os.Stderr
		h.counter.trace.Store(&w)
	}
	logf(fmt.Sprintf("creating %d %s clusters", o.clusters, p))
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	peak := startHeapPeak(mgrCtx)
	start := time.Now()
	apiserverProfiled := profileAPIServer(mgrCtx, env.Config, o.apiserverProfile, o.apiserverProfileAt)
	created, err := createClusters(ctx, c, p, namespace, o, h)
	if err != nil {
		return nil, err
	}
	waitCtx, cancelWait := context.WithTimeout(ctx, o.timeout)
	defer cancelWait()
	took, err := ready.waitAll(waitCtx, created, func(n, total int) { logf(fmt.Sprintf("%d/%d clusters ready", n, total)) })
	if err != nil {
		ready.explainStall(ctx, os.Stderr, missing(created, took), 5, h.describeNodes(ctx, namespace))
		select {
		case e := <-mgrErr:
			return nil, errors.Join(err, e)
		default:
			return nil, err
		}
	}
	allReady := time.Since(start)
	provisioning := h.counter.snapshot()
	provisioningPeak := peak.take()
	gaps, err := ready.serverGaps(ctx)
	if err != nil {
		return nil, err
	}
	logf(fmt.Sprintf("all ready after %s; idle window of %s", allReady.Round(time.Second), o.idle))
	if o.traceIdle {
		var w io.Writer = os.Stderr
		h.counter.trace.Store(&w)
	}
	select {
	case <-time.After(o.idle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	idle := h.counter.snapshot().since(provisioning)
	stopProfile()
	if o.apiserverProfile != "" {
		select {
		case err := <-apiserverProfiled:
			if err != nil {
				logf(err.Error())
			}
		default:
			logf("-apiserver-cpuprofile: the run ended before the profile was complete (none is written then)")
		}
	}

	runtime.GC()
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	p50, p90, maxD := percentiles(took)
	own := provisioning.of(p.controllers())
	var upgrade *upgradeResult
	if o.upgrade {
		if upgrade, err = measureUpgrade(ctx, env.Config, c, h, ready, peak, p, namespace, o, sortedNames(created), logf); err != nil {
			return nil, err
		}
	}
	return &result{
		Provider: string(p), Clusters: o.clusters, Servers: o.shape.Servers, Agents: o.shape.Agents,
		Concurrency:            o.settings.ProviderConcurrency,
		MinPassIntervalSeconds: minPassInterval(p, o.settings).Seconds(),
		AllReadySeconds:        allReady.Seconds(), P50Seconds: p50.Seconds(), P90Seconds: p90.Seconds(), MaxSeconds: maxD.Seconds(),
		Reads: provisioning.Reads, Writes: provisioning.Writes, Conflicts: provisioning.Conflicts, Events: provisioning.Events,
		Requests: provisioning.sorted(), ConflictRequests: sortedEntries(provisioning.ConflictsByKey),
		Controllers: provisioning.byController(), ProviderReads: own.Reads, ProviderWrites: own.Writes,
		ProviderConflicts: own.Conflicts, ProviderRequests: sortedByController(own.ByKey), IdleControllers: idle.byController(),
		IdleSeconds: o.idle.Seconds(), IdleReads: idle.Reads, IdleWrites: idle.Writes, IdleRequests: idle.sorted(),
		HeapBytes: mem.HeapAlloc, APIServerRSSBytes: apiserverRSS(), PeakHeapBytes: provisioningPeak, Upgrade: upgrade,
		ServerGapP50Seconds: medianDuration(gaps).Seconds(),
	}, nil
}

// startCPUProfile starts the CPU profile when path is set; stop ends it (once).
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		})
	}, nil
}

// createClusters creates every cluster's objects, creators at a time, and returns when
// each Cluster object was created.
func createClusters(ctx context.Context, c client.Client, p provider, namespace string, o options, h *harness) (map[string]time.Time, error) {
	var (
		mu      sync.Mutex
		created = map[string]time.Time{}
		errs    []error
		wg      sync.WaitGroup
		next    = make(chan int)
	)
	for range creators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				name := clusterName(i)
				h.standIn.add(namespace, name)
				var err error
				for _, obj := range clusterObjects(p, namespace, name, o.shape) {
					if err = c.Create(ctx, obj); err != nil {
						err = fmt.Errorf("creating %T %s: %w", obj, name, err)
						break
					}
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					created[name] = time.Now()
				}
				mu.Unlock()
			}
		}()
	}
	for i := range o.clusters {
		next <- i
	}
	close(next)
	wg.Wait()
	return created, errors.Join(errs...)
}
