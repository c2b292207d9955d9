package envtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options choose what runs besides kube-apiserver and etcd.
type Options struct {
	// GarbageCollector also starts kube-controller-manager running only the garbage
	// collector, after every CRD is installed.
	GarbageCollector bool
	// Webhooks installs capk3s's webhook configurations (config/*/webhook), pointed at
	// a local server that the test package runs: see WebhookServer. The CRDs of
	// capk3s that serve two versions then convert through that server's /convert, so
	// the managers that serve them must register the converters (SetupWebhooks does).
	Webhooks bool
	// CAPIWebhooks also installs CAPI core's webhook configurations (defaulting and
	// validation of Clusters, ClusterClasses, MachineDeployments, MachineSets,
	// Machines...), as a management cluster has them, on the same local server; the
	// manager must serve them too (stack.Options.CAPIWebhooks). Needs Webhooks.
	CAPIWebhooks bool
	// ServiceEndpointRouting makes the apiserver call a webhook given as a Service at
	// one of the Service's EndpointSlice addresses rather than at its ClusterIP
	// (--enable-aggregator-routing), so that a test can stand in for the Pod behind a
	// Service, such as the webhook Service of installed release manifests, with an
	// EndpointSlice pointing at a local server. Nothing routes ClusterIPs here.
	ServiceEndpointRouting bool
	// AfterRun, if set, runs after the package's tests and before the control plane
	// stops: for what the tests started and no test stops, such as a shared manager's
	// processes.
	AfterRun func()
}

// Environment is a running test control plane.
type Environment struct {
	// Config reaches the apiserver as an admin (system:masters).
	Config *rest.Config
	// Client is an uncached client with NewScheme: reads see the apiserver's state.
	Client client.Client
	// Scheme is the scheme Client uses.
	Scheme *runtime.Scheme

	env *envtest.Environment
	gc  *garbageCollector
}

// Start brings up the control plane and installs CRDs; on error nothing is left running.
func Start(opts Options) (*Environment, error) {
	assets := AssetsDir()
	needed := []string{"etcd", "kube-apiserver"}
	if opts.GarbageCollector {
		needed = append(needed, "kube-controller-manager")
	}
	if err := requireBinaries(assets, needed...); err != nil {
		return nil, err
	}
	paths, err := crdPaths()
	if err != nil {
		return nil, err
	}
	own, err := capk3sCRDs()
	if err != nil {
		return nil, err
	}
	scheme := NewScheme()
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		Scheme:                scheme,
		ErrorIfCRDPathMissing: true,
		CRDDirectoryPaths:     paths,
		CRDs:                  genericProviderCRDs(),
	}
	if opts.ServiceEndpointRouting {
		env.ControlPlane.GetAPIServer().Configure().Set("enable-aggregator-routing", "true")
	}
	if opts.Webhooks {
		if env.WebhookInstallOptions.Paths, err = webhookPaths(); err != nil {
			return nil, err
		}
		if opts.CAPIWebhooks {
			if err := addCAPIWebhooks(&env.WebhookInstallOptions); err != nil {
				return nil, err
			}
		}
	} else {
		if opts.CAPIWebhooks {
			return nil, errors.New("CAPIWebhooks needs Webhooks: they are served by the same local server")
		}
		// Without a webhook server there is nothing to convert through: the CRDs go in
		// as generated, and only their storage version is usable.
		env.CRDs = append(env.CRDs, own...)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	e := &Environment{Config: cfg, Scheme: scheme, env: env}
	if opts.Webhooks {
		// The webhook server's address and CA exist only once env.Start has prepared
		// them, and env.Start would drop the conversion settings of kinds that are not
		// convertible in controller-runtime's sense, so capk3s's CRDs go in now.
		setConversionWebhooks(own, localConversion(env.WebhookInstallOptions))
		if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: own}); err != nil {
			return nil, errors.Join(fmt.Errorf("installing capk3s's CRDs: %w", err), e.Stop())
		}
	}
	if e.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return nil, errors.Join(fmt.Errorf("creating client: %w", err), e.Stop())
	}
	if opts.GarbageCollector {
		// CRDs are installed by now, so the collector's first discovery sees every kind.
		if e.gc, err = startGarbageCollector(env.KubeConfig, assets, e.Client); err != nil {
			return nil, errors.Join(err, e.Stop())
		}
	}
	return e, nil
}

// Stop ends everything Start started.
func (e *Environment) Stop() error {
	var errs []error
	if e.gc != nil {
		errs = append(errs, e.gc.stop())
	}
	if err := e.env.Stop(); err != nil {
		errs = append(errs, fmt.Errorf("stopping kube-apiserver and etcd: %w", err))
	}
	return errors.Join(errs...)
}

// RunMain is the body of a test package's TestMain: one Environment for the whole
// package, stored in *env before the tests run.
func RunMain(m *testing.M, opts Options, env **Environment) {
	setTestLogger()
	e, err := Start(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "test environment: %v\n", err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	if opts.AfterRun != nil {
		opts.AfterRun()
	}
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "test environment: %v\n", err)
	}
	os.Exit(code)
}

// NewNamespace creates a namespace with a generated name for one test and deletes it
// when the test ends.
func (e *Environment) NewNamespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() {
		// Namespaces never finish deleting without a namespace controller; deleting
		// still stops later tests from seeing leftovers through label selectors.
		_ = e.Client.Delete(context.Background(), ns)
	})
	return ns.Name
}

// KubeConfig is a kubeconfig file for the control plane, as an admin: for tools such
// as kubectl, outside the process.
func (e *Environment) KubeConfig() []byte { return e.env.KubeConfig }
