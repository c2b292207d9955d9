package bootos

import (
	"testing"

	"github.com/capk3s/capk3s/internal/cloudinit"
)

func TestSmoke(t *testing.T) {
	requireRoots(t)
	out, err := cloudinit.Render(cloudinit.Input{Role: cloudinit.ServerInit, Version: "v1.36.3+k3s1", Token: "K10x::server:y"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			m := boot(t, s.name, out)
			t.Log(m.diagnostics())
			t.Log(m.read("/var/log/capk3s/run/cluster-api/bootstrap-success.complete"))
		})
	}
}
