package chaos

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/capk3s/capk3s/test/envtest"
	"github.com/capk3s/capk3s/test/sim"
)

var (
	seedFlag   = flag.Uint64("chaos.seed", 0, "seed of the chaos scenario (0: $CAPK3S_CHAOS_SEED, else the clock)")
	roundsFlag = flag.Int("chaos.rounds", 0, "rounds of the chaos scenario (0: $CAPK3S_CHAOS_ROUNDS, else 1)")
)

var (
	env       *envtest.Environment
	simulator = &sim.Provider{}
	// cleanups run after the tests, before the environment stops: the processes the
	// scenario started outlive a failed test's own cleanup only until then.
	cleanups []func()
)

func TestMain(m *testing.M) {
	envtest.RunMain(m, envtest.Options{
		GarbageCollector: true, Webhooks: true,
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

// seed is the scenario's seed: the flag, the environment, or the clock (read once, so
// that the summary names the seed the run used).
var seed = sync.OnceValue(func() uint64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	if s, err := strconv.ParseUint(os.Getenv("CAPK3S_CHAOS_SEED"), 10, 64); err == nil && s != 0 {
		return s
	}
	return uint64(time.Now().UnixNano())
})

// rounds is how many rounds the scenario runs.
func rounds() int {
	if *roundsFlag > 0 {
		return *roundsFlag
	}
	if n, err := strconv.Atoi(os.Getenv("CAPK3S_CHAOS_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 1
}
