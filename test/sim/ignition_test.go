package sim

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_4/types"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
)

const scriptPath = "/etc/capk3s/bootstrap.sh"

// The simulator reads the renderer's Ignition into the same bootData as its
// cloud-config: same files (plus the script), commands, install and k3s options.
func TestParseIgnitionMatchesCloudConfig(t *testing.T) {
	t.Parallel()
	ca := mustCAs(t, theCAs)
	for _, role := range []cloudinit.Role{cloudinit.ServerInit, cloudinit.ServerJoin, cloudinit.Agent} {
		for _, airGapped := range []bool{false, true} {
			in := fullInput(role, ca)
			in.Spec.AgentConfig.AirGapped = airGapped
			in.Spec.PreK3sCommands = []string{"echo 'pre'"}
			in.Spec.PostK3sCommands = []string{"echo post"}
			in.Files = []cloudinit.File{
				{Path: "/opt/zipped", Encoding: bootstrapv1.GzipBase64, Content: gzipBase64(t, "unzipped\n")},
				{Path: "/opt/blob", Encoding: bootstrapv1.Base64, Content: "AAEC"},
			}
			want, _ := parseRendered(t, mustRender(t, in))
			// cloud-config alone checks, before the user's commands, that cloud-init
			// applied the files and users; Ignition fails the boot itself instead.
			want.commands = slices.DeleteFunc(want.commands, func(c string) bool { return strings.HasPrefix(c, "# capk3s: stop unless") })
			in.Spec.Format = bootstrapv1.Ignition
			raw := mustRender(t, in)
			got, err := readBootData(raw, "ignition")
			if err != nil {
				t.Fatalf("%s: readBootData: %v", role, err)
			}
			if err := got.checkStatic(); err != nil {
				t.Errorf("%s: checkStatic: %v", role, err)
			}
			if string(got.files[scriptPath]) == "" {
				t.Errorf("%s: no bootstrap script", role)
			}
			delete(got.files, scriptPath)
			if !reflect.DeepEqual(got.files, want.files) || !reflect.DeepEqual(got.commands, want.commands) ||
				got.install != want.install || !equalJSON(t, got.k3sConfig, want.k3sConfig) {
				t.Errorf("%s (air-gapped %v): Ignition reads as\n%+v\ncloud-config as\n%+v", role, airGapped, got, want)
			}
			if string(got.files["/opt/zipped"]) != "unzipped\n" || string(got.files["/opt/blob"]) != "\x00\x01\x02" {
				t.Errorf("%s: user files = %q, %q", role, got.files["/opt/zipped"], got.files["/opt/blob"])
			}
		}
	}
}

// rendered returns the renderer's Ignition for an agent, decoded for mutation.
func renderedIgnition(t *testing.T) igntypes.Config {
	t.Helper()
	in := fullInput(cloudinit.Agent, clusterCAs{})
	in.Spec.Format = bootstrapv1.Ignition
	var cfg igntypes.Config
	if err := json.Unmarshal(mustRender(t, in), &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestParseIgnitionErrors(t *testing.T) {
	t.Parallel()
	file := func(cfg *igntypes.Config, p string) *igntypes.File {
		for i := range cfg.Storage.Files {
			if cfg.Storage.Files[i].Path == p {
				return &cfg.Storage.Files[i]
			}
		}
		t.Fatalf("no file %s", p)
		return nil
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*igntypes.Config)
		wantErr string
	}{
		{"unit disabled", func(c *igntypes.Config) { *c.Systemd.Units[0].Enabled = false }, "no enabled unit runs a script"},
		{"no unit", func(c *igntypes.Config) { c.Systemd.Units = nil }, "no enabled unit runs a script"},
		{"unit runs another program", func(c *igntypes.Config) {
			*c.Systemd.Units[0].Contents = strings.ReplaceAll(*c.Systemd.Units[0].Contents, "ExecStart="+scriptPath, "ExecStart=/usr/bin/true")
		}, "no enabled unit runs a script"},
		{"script not executable", func(c *igntypes.Config) { *file(c, scriptPath).Mode = 0o644 }, "is not executable"},
		{"remote source", func(c *igntypes.Config) {
			*file(c, k3sConfigPath).Contents.Source = "https://example.com/config.yaml"
		}, "source is not a data URL"},
		{"no k3s config", func(c *igntypes.Config) {
			f := file(c, k3sConfigPath)
			f.Path = "/etc/rancher/k3s/other.yaml"
		}, "/etc/rancher/k3s/config.yaml is not written"},
		{"unknown version", func(c *igntypes.Config) { c.Ignition.Version = "4.0.0" }, "ignition:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := renderedIgnition(t)
			tc.mutate(&cfg)
			raw, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := readBootData(raw, "ignition"); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("readBootData error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestReadBootDataRefusesCloudConfigAsIgnition(t *testing.T) {
	t.Parallel()
	if _, err := readBootData([]byte(minimal("", "")), "ignition"); err == nil || !strings.Contains(err.Error(), "ignition:") {
		t.Fatalf("readBootData = %v, want an Ignition parse error", err)
	}
}
