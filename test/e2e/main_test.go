package e2e

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/capk3s/capk3s/test/envtest"
	"github.com/capk3s/capk3s/test/sim"
	"github.com/capk3s/capk3s/test/stack"
)

var (
	env *envtest.Environment
	// simulator is the infrastructure every scenario runs on. Servers with an etcd
	// snapshot schedule record a snapshot every few seconds.
	simulator = &sim.Provider{SnapshotInterval: 3 * time.Second}
	// manager runs the whole stack for all scenarios: starting it once saves each
	// scenario the caches' start.
	manager envtest.SharedManager
)

func TestMain(m *testing.M) {
	envtest.RunMain(m, envtest.Options{
		// CAPI core's webhooks run as on a management cluster: the topology scenario
		// needs their defaulting.
		GarbageCollector: true, Webhooks: true, CAPIWebhooks: true,
		// The shared manager never stops, so the workload clusters' kube-apiservers,
		// etcds and kines, and PostgreSQL, are stopped here, not left running after the
		// tests.
		AfterRun: func() {
			if err := simulator.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "stopping the simulator: %v\n", err)
			}
			// After the simulator, whose kines hold connections to it.
			if err := stopPostgres(); err != nil {
				fmt.Fprintf(os.Stderr, "stopping PostgreSQL: %v\n", err)
			}
		},
	}, &env)
}

// inPlaceExtension is where the stack serves capk3s's in-place update extension;
// scenarios that use it register it with an ExtensionConfig (inplace_test.go).
var inPlaceExtension stack.ExtensionServing

// startStack starts the shared manager on the first call.
func startStack(t *testing.T) {
	t.Helper()
	manager.Start(t, env, envtest.ManagerOptions{Webhooks: true}, func(ctx context.Context, mgr ctrl.Manager) error {
		port, err := envtest.FreePort()
		if err != nil {
			return err
		}
		certDir, _, host := env.ServingCert()
		inPlaceExtension = stack.ExtensionServing{Host: host, Port: port, CertDir: certDir}
		return stack.Setup(ctx, mgr, stack.Options{Sim: simulator, Webhooks: true, CAPIWebhooks: true, InPlaceExtension: &inPlaceExtension,
			WithoutRestore: true})
	})
	restoreManager.once.Do(func() { restoreManager.err = restoreManager.start() })
	if restoreManager.err != nil {
		t.Fatalf("starting the restore's manager: %v", restoreManager.err)
	}
}

// e2eFirstServerDeadline is the restore's first-server deadline in these scenarios:
// the simulator boots a server in seconds, and a first server that cannot restore
// fails at once (restore_test.go waits for it).
const e2eFirstServerDeadline = 90 * time.Second

// restoreManager runs the KThreesEtcdRestore controller in a manager of its own, as
// the control-plane manager runs it beside CAPI core, so that a scenario can stop and
// start it in the middle of a restore (restart).
var restoreManager restoreMgr

type restoreMgr struct {
	once sync.Once
	err  error
	mu   sync.Mutex
	stop func() error
}

func (m *restoreMgr) start() error {
	_, stop, err := env.RunManager(envtest.ManagerOptions{}, stack.SetupRestoreWith(e2eFirstServerDeadline))
	if err != nil {
		return err
	}
	m.stop = stop
	return nil
}

// restart stops the restore's manager (its caches and ClusterCache go with it) and
// starts a new one.
func (m *restoreMgr) restart(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.stop(); err != nil {
		t.Logf("the restore's manager stopped with: %v", err)
	}
	if err := m.start(); err != nil {
		t.Fatalf("starting the restore's manager again: %v", err)
	}
}
