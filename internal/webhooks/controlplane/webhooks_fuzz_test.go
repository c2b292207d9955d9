package controlplane

import (
	"testing"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/webhooktest"
)

// The fuzz targets feed the webhooks objects made from random input (see
// webhooktest.FillFromFuzz: JSON seeds from testdata/fuzz, or a random filler driven
// by the input) and check the properties of webhooktest.FuzzWebhook. `make fuzz` runs
// them for long; `make test` for a few seconds each, after the seed corpus that every
// `go test` runs.

func FuzzKThreesControlPlaneWebhook(f *testing.F) {
	f.Add([]byte(`{}`), []byte(`{"spec":{"version":"1.31.4+k3s1","replicas":3}}`), false)
	f.Fuzz(func(t *testing.T, oldData, newData []byte, dryRun bool) {
		webhooktest.FuzzWebhook[controlplanev1.KThreesControlPlane](t, &KThreesControlPlane{}, oldData, newData, dryRun)
	})
}

func FuzzKThreesControlPlaneTemplateWebhook(f *testing.F) {
	f.Add([]byte(`{}`), []byte(`{"spec":{"template":{"spec":{"version":"1.31.4+k3s1"}}}}`), true)
	f.Fuzz(func(t *testing.T, oldData, newData []byte, dryRun bool) {
		webhooktest.FuzzWebhook[controlplanev1.KThreesControlPlaneTemplate](t, &KThreesControlPlaneTemplate{}, oldData, newData, dryRun)
	})
}
