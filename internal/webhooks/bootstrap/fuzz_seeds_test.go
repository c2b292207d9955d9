package bootstrap

import (
	"flag"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
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
	config := func(modify func(*bootstrapv1.KThreesConfigSpec)) *bootstrapv1.KThreesConfig {
		c := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: validSpec()}
		if modify != nil {
			modify(&c.Spec)
		}
		return c
	}
	template := func(c *bootstrapv1.KThreesConfig) *bootstrapv1.KThreesConfigTemplate {
		t := &bootstrapv1.KThreesConfigTemplate{ObjectMeta: c.ObjectMeta}
		t.Spec.Template.Spec = c.Spec
		return t
	}
	valid := config(nil)
	variations := map[string]*bootstrapv1.KThreesConfig{
		"upgrade":         config(func(s *bootstrapv1.KThreesConfigSpec) { s.Version = "v1.32.0+k3s1" }),
		"leading-zero":    config(func(s *bootstrapv1.KThreesConfigSpec) { s.Version = "v1.031.4+k3s1" }),
		"no-v":            config(func(s *bootstrapv1.KThreesConfigSpec) { s.Version = "1.31.4+k3s1" }),
		"bad-cidr":        config(func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.ClusterCidr = "10.42.0.0/33" }),
		"relative-path":   config(func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Path = "etc/motd" }),
		"bad-permissions": config(func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Permissions = "999" }),
		"datastore": config(func(s *bootstrapv1.KThreesConfigSpec) {
			s.ServerConfig.Datastore = &bootstrapv1.Datastore{EndpointSecret: bootstrapv1.SecretKeyReference{Name: "db", Key: "endpoint"}}
		}),
		"ignition": config(func(s *bootstrapv1.KThreesConfigSpec) { s.Format = bootstrapv1.Ignition }),
	}
	webhooktest.WriteCorpusEntry(t, "FuzzKThreesConfigWebhook", "create-valid", []byte("{}"), valid, false)
	webhooktest.WriteCorpusEntry(t, "FuzzKThreesConfigTemplateWebhook", "create-valid", []byte("{}"), template(valid), false)
	webhooktest.WriteCorpusEntry(t, "FuzzKThreesConfigWebhook", "random-filler", []byte("old: not JSON, fills at random"), []byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09"), false)
	for name, c := range variations {
		webhooktest.WriteCorpusEntry(t, "FuzzKThreesConfigWebhook", "update-"+name, valid, c, false)
		webhooktest.WriteCorpusEntry(t, "FuzzKThreesConfigTemplateWebhook", "update-"+name, template(valid), template(c), name == "upgrade")
	}
}
