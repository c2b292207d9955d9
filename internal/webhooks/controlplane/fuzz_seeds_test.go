package controlplane

import (
	"flag"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/webhooktest"
)

var writeFuzzSeeds = flag.Bool("write-fuzz-seeds", false, "rewrite the fuzz targets' seed corpora in testdata/fuzz/")

// TestWriteFuzzSeeds writes the seed corpora of this package's fuzz targets from the
// valid spec the unit tests use and a few refused variations of it (go test
// -run TestWriteFuzzSeeds -write-fuzz-seeds). Without the flag it does nothing.
func TestWriteFuzzSeeds(t *testing.T) {
	if !*writeFuzzSeeds {
		t.Skip("-write-fuzz-seeds not set")
	}
	cp := func(modify func(*controlplanev1.KThreesControlPlaneSpec)) *controlplanev1.KThreesControlPlane {
		c := &controlplanev1.KThreesControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "cp"}, Spec: validSpec()}
		if modify != nil {
			modify(&c.Spec)
		}
		return c
	}
	template := func(c *controlplanev1.KThreesControlPlane) *controlplanev1.KThreesControlPlaneTemplate {
		t := &controlplanev1.KThreesControlPlaneTemplate{ObjectMeta: c.ObjectMeta}
		t.Spec.Template.Spec = controlplanev1.KThreesControlPlaneTemplateResourceSpec{
			KThreesConfigSpec: c.Spec.KThreesConfigSpec, RolloutStrategy: c.Spec.RolloutStrategy,
			RemediationStrategy: c.Spec.RemediationStrategy, MachineNaming: c.Spec.MachineNaming,
		}
		return t
	}
	datastore := func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.KThreesConfigSpec.ServerConfig.Datastore = &bootstrapv1.Datastore{EndpointSecret: bootstrapv1.SecretKeyReference{Name: "db", Key: "endpoint"}}
	}
	valid := cp(nil)
	variations := map[string]*controlplanev1.KThreesControlPlane{
		"upgrade":     cp(func(s *controlplanev1.KThreesControlPlaneSpec) { s.Version = "v1.32.0+k3s1" }),
		"skip-minor":  cp(func(s *controlplanev1.KThreesControlPlaneSpec) { s.Version = "v1.33.0+k3s1" }),
		"downgrade":   cp(func(s *controlplanev1.KThreesControlPlaneSpec) { s.Version = "v1.30.4+k3s1" }),
		"two-servers": cp(func(s *controlplanev1.KThreesControlPlaneSpec) { s.Replicas = ptr.To[int32](2) }),
		"service-cidr": cp(func(s *controlplanev1.KThreesControlPlaneSpec) {
			s.KThreesConfigSpec.ServerConfig.ServiceCidr = "10.96.0.0/12"
		}),
		"datastore": cp(datastore),
		"surge-zero-of-1": cp(func(s *controlplanev1.KThreesControlPlaneSpec) {
			s.Replicas = ptr.To[int32](1)
			s.RolloutStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
		}),
		"naming": cp(func(s *controlplanev1.KThreesControlPlaneSpec) { s.MachineNaming.Template = "{{ .cluster.name }}" }),
		// The fuzzer's mutations of this one are templates that text/template would
		// execute for long: they must all be refused without rendering.
		"naming-loop": cp(func(s *controlplanev1.KThreesControlPlaneSpec) {
			s.MachineNaming.Template = "{{ range 9999 }}{{ range 9999 }}{{ $.random }}{{ end }}{{ end }}"
		}),
	}
	webhooktest.WriteCorpusEntry(t, "FuzzKThreesControlPlaneWebhook", "create-valid", []byte("{}"), valid, false)
	webhooktest.WriteCorpusEntry(t, "FuzzKThreesControlPlaneTemplateWebhook", "create-valid", []byte("{}"), template(valid), false)
	webhooktest.WriteCorpusEntry(t, "FuzzKThreesControlPlaneWebhook", "random-filler", []byte("old: not JSON, fills at random"), []byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09"), false)
	for name, c := range variations {
		webhooktest.WriteCorpusEntry(t, "FuzzKThreesControlPlaneWebhook", "update-"+name, valid, c, false)
		webhooktest.WriteCorpusEntry(t, "FuzzKThreesControlPlaneTemplateWebhook", "update-"+name, template(valid), template(c), name == "upgrade")
	}
	for name, s := range map[string]struct {
		cp       *controlplanev1.KThreesControlPlane
		from, to int32
	}{
		"three-to-five": {valid, 3, 5}, "three-to-four": {valid, 3, 4}, "three-to-zero": {valid, 3, 0},
		"datastore-one-to-two": {cp(datastore), 1, 2},
		"surge-zero-to-one": {cp(func(s *controlplanev1.KThreesControlPlaneSpec) {
			s.RolloutStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
		}), 3, 1},
	} {
		webhooktest.WriteCorpusEntry(t, "FuzzScaleWebhook", name, s.cp, s.from, s.to, []byte(nil))
	}
	webhooktest.WriteCorpusEntry(t, "FuzzScaleWebhook", "bad-scale", valid, int32(3), int32(5), []byte(`{"spec":{"replicas":"five"}}`))
}
