package crdmigration_test

import (
	"testing"

	"github.com/capk3s/capk3s/test/envtest"
)

var env *envtest.Environment

// TestMain starts one apiserver, with the CRDs' conversion pointed at the webhook
// server the test's manager runs.
func TestMain(m *testing.M) {
	envtest.RunMain(m, envtest.Options{Webhooks: true}, &env)
}
