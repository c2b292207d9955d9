package secretcache_test

import (
	"testing"

	"github.com/capk3s/capk3s/test/envtest"
)

// env is the package's test control plane (kube-apiserver and etcd).
var env *envtest.Environment

func TestMain(m *testing.M) {
	envtest.RunMain(m, envtest.Options{}, &env)
}
