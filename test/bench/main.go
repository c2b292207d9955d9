package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

type options struct {
	provider string
	compare  string
	rounds   int
	clusters int
	shape    shape
	settings settings
	idle     time.Duration
	timeout  time.Duration
	verbose  bool
	// upgrade runs the fleet upgrade phase after the idle window (upgrade.go).
	upgrade bool
	// logErrors shows the controllers' error logs (stderr).
	logErrors bool
	// traceIdle prints every write of the idle window (stderr).
	traceIdle bool
	// traceWrites prints every write from the first cluster's creation on (stderr).
	traceWrites bool
	// cpuProfile, when set, is where the run writes its CPU profile (pprof).
	cpuProfile string
	// apiserverProfile, when set, is where a 30 s CPU profile of the kube-apiserver goes,
	// taken apiserverProfileAt after the first cluster's creation.
	apiserverProfile   string
	apiserverProfileAt time.Duration
	// pprofAddr, when set, is where the process serves its pprof endpoints while it runs.
	pprofAddr string
}

func main() {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.provider, "provider", "capk3s", "provider pair to run: capk3s or kcp (KubeadmControlPlane + KubeadmConfig)")
	fs.StringVar(&o.compare, "compare", "", "comma-separated providers to run in turn, each in a fresh process and control plane, then print the ratios of the first to the others (e.g. capk3s,kcp)")
	fs.IntVar(&o.rounds, "rounds", 1, "with -compare: how many times to run each provider, alternating")
	fs.IntVar(&o.clusters, "clusters", 10, "number of clusters")
	shapeFlags(fs, &o.shape)
	settingsFlags(fs, &o.settings)
	fs.DurationVar(&o.idle, "idle", 60*time.Second, "idle window after all clusters are ready, in which requests are counted again")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up when clusters are not all ready by then (and, with -upgrade, not all upgraded by then after the first bump)")
	fs.BoolVar(&o.upgrade, "upgrade", false, "after the idle window, upgrade every cluster at once by a patch release (control plane first, then the MachineDeployment) and measure until every Machine is up to date")
	fs.BoolVar(&o.verbose, "v", false, "print progress while waiting")
	fs.BoolVar(&o.logErrors, "log-errors", false, "print the controllers' error logs (at hundreds of clusters, the ClusterCache's connection retries alone cost CPU when logged)")
	fs.BoolVar(&o.traceWrites, "trace-writes", false, "print every write from the start, with the object and the start of the request body (stderr); use with few clusters")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write the process's CPU profile, from the first cluster's creation to the end of the idle window, to this file (go tool pprof); with -compare, <file>.<provider>.<round>")
	fs.StringVar(&o.apiserverProfile, "apiserver-cpuprofile", "", "write a 30 s CPU profile of the kube-apiserver to this file, starting -apiserver-profile-at after the first cluster's creation (go tool pprof); with -compare, <file>.<provider>.<round>")
	fs.DurationVar(&o.apiserverProfileAt, "apiserver-profile-at", time.Minute, "when the kube-apiserver's CPU profile starts, after the first cluster's creation")
	fs.StringVar(&o.pprofAddr, "pprof-addr", "", "serve the benchmark process's pprof endpoints (goroutine dumps, heap, CPU) on this address while it runs, e.g. localhost:6060; not with -compare")
	fs.BoolVar(&o.traceIdle, "trace-idle", false, "print every write of the idle window, with the object and the start of the request body (stderr)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if err := o.validate(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	}
	if err := servePprof(o.pprofAddr); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
	var err error
	if o.compare != "" {
		err = runCompare(os.Stdout, o, os.Args[1:])
	} else {
		err = runOnce(os.Stdout, o)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func shapeFlags(fs *flag.FlagSet, s *shape) {
	var servers, agents int
	fs.Func("servers", "servers (control-plane machines) per cluster (default 1)", intInto(&servers, &s.Servers))
	fs.Func("agents", "agents (a MachineDeployment) per cluster (default 0)", intInto(&agents, &s.Agents))
	s.Servers = 1
	fs.DurationVar(&s.VMDelay, "vm-delay", 2*time.Second, "simulated time to provision a machine's VM")
	fs.DurationVar(&s.NodeDelay, "node-delay", 2*time.Second, "simulated time from VM to Node")
	fs.DurationVar(&s.EtcdDelay, "etcd-delay", 1*time.Second, "simulated time from Node to etcd member (servers)")
	fs.DurationVar(&s.APIServerDelay, "apiserver-delay", 1*time.Second, "simulated time from Node to API server (servers)")
}

func intInto(tmp *int, dst *int32) func(string) error {
	return func(v string) error {
		if _, err := fmt.Sscan(v, tmp); err != nil {
			return fmt.Errorf("not a number: %q", v)
		}
		*dst = int32(*tmp) //nolint:gosec // range checked by validate
		return nil
	}
}

func settingsFlags(fs *flag.FlagSet, s *settings) {
	fs.Float64Var(&s.QPS, "kube-api-qps", 100, "management API client QPS (CAPI's and capk3s's default)")
	fs.IntVar(&s.Burst, "kube-api-burst", 200, "management API client burst")
	fs.Float64Var(&s.ClusterCacheQPS, "clustercache-qps", 20, "workload cluster client QPS (CAPI's default)")
	fs.IntVar(&s.ClusterCacheBurst, "clustercache-burst", 30, "workload cluster client burst")
	fs.DurationVar(&s.ConnectionRetry, "clustercache-retry", 2*time.Second, "ClusterCache retry interval for a workload cluster it could not reach yet (CAPI's default: 30s)")
	fs.IntVar(&s.ProviderConcurrency, "concurrency", 10, "concurrency of the provider's reconcilers, the same for both providers")
	fs.DurationVar(&s.SyncPeriod, "sync-period", 10*time.Minute, "manager cache resync period")
	fs.DurationVar(&s.Capk3sMinPassInterval, "capk3s-min-pass-interval", 0, "capk3s's --min-pass-interval: at most one pass per object per interval in capk3s's reconcilers (e.g. 1s, as CAPI paces the kubeadm providers); 0 is capk3s's default, off")
}

func (o *options) validate() error {
	var errs []error
	if _, err := parseProvider(o.provider); err != nil {
		errs = append(errs, fmt.Errorf("-provider: %w", err))
	}
	if o.compare != "" {
		for _, p := range strings.Split(o.compare, ",") {
			if _, err := parseProvider(p); err != nil {
				errs = append(errs, fmt.Errorf("-compare: %w", err))
			}
		}
	}
	if o.clusters < 1 || o.clusters > 10000 {
		errs = append(errs, fmt.Errorf("-clusters must be 1..10000, not %d", o.clusters))
	}
	if o.shape.Servers < 1 || o.shape.Servers > 7 {
		errs = append(errs, fmt.Errorf("-servers must be 1..7, not %d", o.shape.Servers))
	}
	if o.shape.Agents < 0 || o.shape.Agents > 100 {
		errs = append(errs, fmt.Errorf("-agents must be 0..100, not %d", o.shape.Agents))
	}
	if o.rounds < 1 {
		errs = append(errs, fmt.Errorf("-rounds must be at least 1, not %d", o.rounds))
	}
	if o.settings.ProviderConcurrency < 1 {
		errs = append(errs, fmt.Errorf("-concurrency must be at least 1"))
	}
	if o.settings.Capk3sMinPassInterval < 0 {
		errs = append(errs, fmt.Errorf("-capk3s-min-pass-interval must not be negative"))
	}
	return errors.Join(errs...)
}

// runOnce runs one provider: a fresh control plane, the clusters, the waits, the report.
func runOnce(w io.Writer, o options) error {
	p, _ := parseProvider(o.provider)
	// Interrupted, the run still stops the kube-apiserver and etcd it started.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	r, err := measure(ctx, p, o, func(msg string) {
		if o.verbose {
			fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format(time.TimeOnly), msg)
		}
	})
	if err != nil {
		return err
	}
	return r.print(w)
}
