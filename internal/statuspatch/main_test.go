package statuspatch

import (
	"testing"

	"github.com/capk3s/capk3s/test/envtest"
)

// env is the package's test control plane (kube-apiserver and etcd): the guard on a
// status write is the apiserver's precondition check, which only a real one plays.
var env *envtest.Environment

func TestMain(m *testing.M) {
	envtest.RunMain(m, envtest.Options{}, &env)
}
