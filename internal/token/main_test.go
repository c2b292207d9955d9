package token_test

import (
	"flag"
	"os"
	"testing"

	"github.com/capk3s/capk3s/test/envtest"
)

// env is the package's test control plane: kube-apiserver, etcd and a real garbage
// collector. It is nil under -short, which runs only the tests that need no apiserver.
var env *envtest.Environment

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	envtest.RunMain(m, envtest.Options{GarbageCollector: true}, &env)
}

// requireEnv skips integration tests under -short.
func requireEnv(t *testing.T) {
	t.Helper()
	if env == nil {
		t.Skip("needs kube-apiserver, etcd and kube-controller-manager; not run with -short")
	}
}
