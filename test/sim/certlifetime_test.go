package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

func TestSigningLifetimeFromTheServersEnvironmentFiles(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	cases := []struct {
		name  string
		files map[string]string
		want  time.Duration
	}{
		{"none", nil, 365 * day},
		{"sysconfig", map[string]string{"/etc/sysconfig/k3s": "# test\nCATTLE_NEW_SIGNED_CERT_EXPIRATION_DAYS=60\n"}, 60 * day},
		{"quoted, beside the S3 keys", map[string]string{"/etc/default/k3s": "AWS_ACCESS_KEY_ID=x\nCATTLE_NEW_SIGNED_CERT_EXPIRATION_DAYS=\"30\"\n"}, 30 * day},
		{"sysconfig overrides default", map[string]string{"/etc/default/k3s": "CATTLE_NEW_SIGNED_CERT_EXPIRATION_DAYS=30", "/etc/sysconfig/k3s": "CATTLE_NEW_SIGNED_CERT_EXPIRATION_DAYS=90"}, 90 * day},
		{"not a number, as dynamiclistener", map[string]string{"/etc/sysconfig/k3s": "CATTLE_NEW_SIGNED_CERT_EXPIRATION_DAYS=soon"}, 365 * day},
		{"the agent's unit's file", map[string]string{"/etc/sysconfig/k3s-agent": "CATTLE_NEW_SIGNED_CERT_EXPIRATION_DAYS=60"}, 365 * day},
	}
	for _, tc := range cases {
		b := &bootData{files: map[string][]byte{}}
		for p, c := range tc.files {
			b.files[p] = []byte(c)
		}
		if got := b.signingLifetime(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// A server signs its own certificates and the agents' with its lifetime; the agent's
// report then shows that lifetime too, as on real k3s v1.36.2.
func TestAgentsCertificatesTakeTheServersLifetime(t *testing.T) {
	t.Parallel()
	g := newCertRig(t, &Provider{}, nil)
	g.wc.serverSigns("s-0", 60*24*time.Hour)
	start := time.Now().UTC()
	for _, name := range []string{"s-0", "a-0"} {
		role := roleAgent
		if name == "s-0" {
			role = roleServer
		}
		g.run(t, g.machine(t, name, role, nil))
	}
	warned := map[string]string{}
	for _, e := range g.events(t) {
		if e.Reason == k3smodel.CertificateExpirationWarning {
			warned[e.InvolvedObject.Name] = e.Message
		}
	}
	for _, node := range []string{"s-0", "a-0"} {
		msg, ok := warned[node]
		if !ok {
			t.Errorf("no warning on %s: %v", node, warned)
			continue
		}
		if !strings.Contains(msg, "kubelet/client-kubelet.crt: certificate CN=system:node:"+node+",O=system:nodes will expire within 120 days at ") {
			t.Errorf("%s's warning does not list its kubelet certificate: %s", node, msg)
		}
		// Leaves are dated an hour back (or from their CA): expiry within 60 days of now.
		for _, c := range strings.Split(msg, " at ")[1:] {
			at, err := time.Parse(time.RFC3339, strings.Fields(c)[0])
			if err != nil || at.After(start.Add(60*24*time.Hour)) || at.Before(start.Add(60*24*time.Hour-2*time.Hour)) {
				t.Errorf("%s: a date %q not 60 days on (%v)", node, c, err)
			}
		}
	}
}
