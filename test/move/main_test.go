package move

import (
	"testing"

	"github.com/capk3s/capk3s/test/envtest"
)

// source is the management cluster the cluster starts on; each test starts its target.
var source *envtest.Environment

func TestMain(m *testing.M) {
	envtest.RunMain(m, envtest.Options{GarbageCollector: true, Webhooks: true}, &source)
}
