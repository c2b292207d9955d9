package bootstrap

import (
	"context"
	"strings"
	"testing"

	ign "github.com/coreos/ignition/v2/config/v3_4"
	"github.com/vincent-petithory/dataurl"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// A config asking for Ignition gets a data Secret whose format key says so and
// whose value Ignition itself accepts, carrying the k3s config and the
// bootstrap unit.
func TestIgnitionFormatDataSecret(t *testing.T) {
	startManager(t)
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	tok := createToken(t, cluster)
	config := newMachineWithConfig(t, cluster, "server-ign", true, bootstrapv1.KThreesConfigSpec{
		Format:          bootstrapv1.Ignition,
		PreK3sCommands:  []string{"echo pre"},
		AgentConfig:     bootstrapv1.KThreesAgentConfig{NodeName: "server-ign"},
		PostK3sCommands: []string{"echo post"},
	})
	s := waitForDataSecret(t, config)
	if got := string(s.Data["format"]); got != "ignition" {
		t.Fatalf("data Secret format = %q, want ignition", got)
	}
	cfg, rpt, err := ign.Parse(s.Data["value"])
	if err != nil {
		t.Fatalf("value is not an Ignition 3.4 config: %v: %s", err, rpt.String())
	}
	files := map[string]string{}
	for _, f := range cfg.Storage.Files {
		du, err := dataurl.DecodeString(*f.Contents.Source)
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		files[f.Path] = string(du.Data)
	}
	var k3sCfg map[string]any
	if err := yaml.Unmarshal([]byte(files["/etc/rancher/k3s/config.yaml"]), &k3sCfg); err != nil {
		t.Fatal(err)
	}
	ca, err := secret.Get(context.Background(), env.Client, client.ObjectKeyFromObject(cluster), secret.ClusterCA)
	if err != nil {
		t.Fatalf("the first server did not create the cluster CA: %v", err)
	}
	wantToken, _ := tok.ServerJoinToken(ca.Data[secret.TLSCrtDataName])
	if k3sCfg["token"] != wantToken || k3sCfg["node-name"] != "server-ign" || k3sCfg["cluster-init"] != true {
		t.Errorf("config.yaml = %v, want the server token, node-name server-ign and cluster-init", k3sCfg)
	}
	if files[k3s.ServerCACertPath] != string(ca.Data[secret.TLSCrtDataName]) {
		t.Errorf("%s is not the cluster CA certificate", k3s.ServerCACertPath)
	}
	script := files["/etc/capk3s/bootstrap.sh"]
	for _, line := range []string{"echo pre\n", "sh -s - server\n", "echo post\n", "systemctl is-active --quiet k3s &&"} {
		if !strings.Contains(script, line) {
			t.Errorf("bootstrap script lacks %q:\n%s", line, script)
		}
	}
	if len(cfg.Systemd.Units) != 1 || cfg.Systemd.Units[0].Name != "capk3s-bootstrap.service" || !*cfg.Systemd.Units[0].Enabled {
		t.Errorf("units = %+v, want capk3s-bootstrap.service enabled", cfg.Systemd.Units)
	}
}
