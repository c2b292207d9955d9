package envtest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/capk3s/capk3s/test/envtest"
)

// TestRunManager: the manager is returned only once Ready passes, stop ends it, and
// asking for webhooks on an environment started without them fails before anything
// runs.
func TestRunManager(t *testing.T) {
	setupCalled, readyCalls := false, 0
	_, stop, err := env.RunManager(envtest.ManagerOptions{
		Ready: func(context.Context) error {
			if readyCalls++; readyCalls < 2 {
				return errors.New("not yet")
			}
			return nil
		},
	}, func(context.Context, ctrl.Manager) error {
		setupCalled = true
		return nil
	})
	if err != nil {
		t.Fatalf("RunManager: %v", err)
	}
	if !setupCalled || readyCalls != 2 {
		t.Errorf("setup called: %v, Ready called %d times; want true, 2", setupCalled, readyCalls)
	}
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}

	_, _, err = env.RunManager(envtest.ManagerOptions{}, func(context.Context, ctrl.Manager) error {
		return errors.New("no such controller")
	})
	if err == nil || !strings.Contains(err.Error(), "no such controller") {
		t.Errorf("failing setup: got %v", err)
	}

	_, _, err = env.RunManager(envtest.ManagerOptions{Webhooks: true}, func(context.Context, ctrl.Manager) error {
		t.Error("setup called although the environment serves no webhooks")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "Options.Webhooks") {
		t.Errorf("webhooks without Options.Webhooks: got %v", err)
	}
}

// fatalRecorder records Fatalf instead of ending the test, to check a failure path.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (*fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

// TestSharedManagerStartsOnce: the first Start runs setup; a failed start fails that
// test and every later one without trying again.
func TestSharedManagerStartsOnce(t *testing.T) {
	var m envtest.SharedManager
	setups := 0
	setup := func(context.Context, ctrl.Manager) error {
		setups++
		return errors.New("no such controller")
	}
	for i := range 2 {
		r := &fatalRecorder{TB: t}
		m.Start(r, env, envtest.ManagerOptions{}, setup)
		if !strings.Contains(r.fatal, "no such controller") {
			t.Errorf("Start %d: fatal %q, want the setup error", i+1, r.fatal)
		}
	}
	if setups != 1 {
		t.Errorf("setup ran %d times, want 1", setups)
	}
}
