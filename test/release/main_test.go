package release

import (
	"testing"

	"github.com/capk3s/capk3s/test/envtest"
)

var env *envtest.Environment

func TestMain(m *testing.M) {
	envtest.RunMain(m, envtest.Options{Webhooks: true}, &env)
}
