package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/capk3s/capk3s/test/envtest"
	"github.com/capk3s/capk3s/test/sim"
	"github.com/capk3s/capk3s/test/stack"
)

// sandboxOptions are the sandbox's flags.
type sandboxOptions struct {
	dir         string
	exitWhenUp  bool
	timeout     time.Duration
	servers     int
	agents      int
	version     string
	clusterName string
}

func runSandbox(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("capk3s sandbox", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := sandboxOptions{}
	fs.StringVar(&o.dir, "dir", ".sandbox", "where the sandbox keeps its kubeconfigs, logs and the workload clusters' files (emptied at start)")
	fs.BoolVar(&o.exitWhenUp, "exit-when-ready", false, "stop everything and exit 0 once the demo cluster is Available (for scripts)")
	fs.DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up if the demo cluster is not Available by then")
	fs.IntVar(&o.servers, "servers", 3, "k3s servers of the demo cluster (odd: embedded etcd)")
	fs.IntVar(&o.agents, "agents", 2, "k3s agents of the demo cluster")
	fs.StringVar(&o.version, "version", "v1.36.3+k3s1", "k3s version of the demo cluster")
	fs.StringVar(&o.clusterName, "name", "demo", "name of the demo cluster")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		_, _ = fmt.Fprintf(stderr, "capk3s sandbox: unexpected arguments %v\n", fs.Args())
		return 2
	}
	if o.servers < 1 || o.servers%2 == 0 || o.agents < 0 {
		_, _ = fmt.Fprintln(stderr, "capk3s sandbox: --servers must be odd and at least 1, --agents at least 0")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := sandbox(ctx, o, stdout); err != nil {
		_, _ = fmt.Fprintf(stderr, "capk3s sandbox: %v\n", err)
		return 1
	}
	return 0
}

// sandbox runs the management plane and the demo cluster until ctx ends or, with
// exitWhenUp, until the cluster is Available. Everything it started is stopped
// before it returns.
func sandbox(ctx context.Context, o sandboxOptions, out io.Writer) (retErr error) {
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("emptying %s: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "workloads"), 0o755); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(dir, "controllers.log"))
	if err != nil {
		return err
	}
	defer func() { retErr = errors.Join(retErr, logFile.Close()) }()
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile), zap.UseDevMode(true)))

	say := func(format string, a ...any) { _, _ = fmt.Fprintf(out, format+"\n", a...) }
	say("Starting the management plane: kube-apiserver, etcd and the garbage collector (binaries from %s)", envtest.AssetsDir())
	env, err := envtest.Start(envtest.Options{GarbageCollector: true, Webhooks: true, CAPIWebhooks: true})
	if err != nil {
		return err
	}
	defer func() { retErr = errors.Join(retErr, env.Stop()) }()
	mgmtKubeconfig := filepath.Join(dir, "management.kubeconfig")
	if err := os.WriteFile(mgmtKubeconfig, env.KubeConfig(), 0o600); err != nil {
		return err
	}

	simulator := &sim.Provider{Dir: filepath.Join(dir, "workloads")}
	say("Starting Cluster API core, the capk3s bootstrap and control-plane providers and the k3s simulator (logs: %s)", logFile.Name())
	_, stopManager, err := env.RunManager(envtest.ManagerOptions{Webhooks: true}, func(ctx context.Context, mgr ctrl.Manager) error {
		return stack.Setup(ctx, mgr, stack.Options{Sim: simulator, Webhooks: true, CAPIWebhooks: true})
	})
	if err != nil {
		return err
	}
	defer func() { retErr = errors.Join(retErr, stopManager(), simulator.Stop()) }()

	demo := stack.NewCluster(stack.ClusterOptions{
		Namespace: "default", Name: o.clusterName,
		Servers: int32(o.servers), Agents: int32(o.agents), Version: o.version,
	})
	for _, obj := range demo.Objects() {
		if err := env.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	say("Applied cluster %q: %d servers (KThreesControlPlane), %d agents (MachineDeployment), k3s %s", o.clusterName, o.servers, o.agents, o.version)

	waitCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := watchProgress(waitCtx, env, demo, say); err != nil {
		if ctx.Err() != nil {
			say("Interrupted; stopping.")
			return nil
		}
		return err
	}
	workloadKubeconfig := filepath.Join(dir, o.clusterName+".kubeconfig")
	if err := writeWorkloadKubeconfig(ctx, env, demo, workloadKubeconfig); err != nil {
		return err
	}
	say("\nCluster %q is Available.\n", o.clusterName)
	say("  The management cluster:  kubectl --kubeconfig %s get clusters,kthreescontrolplanes,machines -A", mgmtKubeconfig)
	say("  The workload cluster:    kubectl --kubeconfig %s get nodes", workloadKubeconfig)
	if o.exitWhenUp {
		say("\nStopping (--exit-when-ready).")
		return nil
	}
	say("\nPress Ctrl-C to stop the sandbox.")
	<-ctx.Done()
	say("Stopping.")
	return nil
}
