package release

import (
	"testing"

	"github.com/capk3s/capk3s/test/envtest"
)

var env *envtest.Environment

// ServiceEndpointRouting: the webhook Services that clusterctl installs reach this
// package's local servers through EndpointSlices (see checkConversionServed).
func TestMain(m *testing.M) {
	envtest.RunMain(m, envtest.Options{Webhooks: true, ServiceEndpointRouting: true}, &env)
}
