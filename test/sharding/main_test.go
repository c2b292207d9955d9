package sharding

import (
	"fmt"
	"os"
	"testing"

	"github.com/capk3s/capk3s/test/envtest"
	"github.com/capk3s/capk3s/test/sim"
)

var (
	env       *envtest.Environment
	simulator = &sim.Provider{}
	// stackManager runs CAPI core and the simulator until the test binary exits.
	stackManager envtest.SharedManager
	// cleanups run after the tests, before the environment stops: the manager
	// processes and the restarted apiserver outlive a failed test's own cleanup only
	// until then.
	cleanups []func()
)

func TestMain(m *testing.M) {
	envtest.RunMain(m, envtest.Options{
		// The manager processes serve webhooks too, with the environment's certificate.
		Webhooks: true,
		AfterRun: func() {
			for i := len(cleanups) - 1; i >= 0; i-- {
				cleanups[i]()
			}
			if err := simulator.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "stopping the simulator: %v\n", err)
			}
		},
	}, &env)
}
