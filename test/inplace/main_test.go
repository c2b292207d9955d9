package inplace

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
)

func TestMain(m *testing.M) {
	envtest.RunMain(m, envtest.Options{Webhooks: true, AfterRun: func() {
		if err := simulator.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the simulator: %v\n", err)
		}
	}}, &env)
}
