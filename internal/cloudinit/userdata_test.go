package cloudinit

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// A cloud-config fragment's keys land in the rendered document beside capk3s's,
// and capk3s's part is the same bytes as without the fragment: runcmd, with the
// sentinel last, is untouched.
func TestCloudConfigFragmentIsMerged(t *testing.T) {
	in := minimal(Agent)
	in.Spec.PreK3sCommands = []string{"echo pre"}
	plain, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Spec.AdditionalUserData.CloudConfig = "timezone: Europe/Berlin\nlocale: \"no\"\nfinal_message: done {{ not jinja }}\n"
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out, plain) {
		t.Errorf("capk3s's part changed with the fragment:\nwithout:\n%s\nwith:\n%s", plain, out)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("merged output is not YAML: %v\n%s", err, out)
	}
	want := map[string]any{"timezone": "Europe/Berlin", "locale": "no", "final_message": "done {{ not jinja }}"}
	for k, v := range want {
		if doc[k] != v {
			t.Errorf("%s = %#v, want %#v", k, doc[k], v)
		}
	}
	plainDoc := map[string]any{}
	if err := yaml.Unmarshal(plain, &plainDoc); err != nil {
		t.Fatal(err)
	}
	if len(doc) != len(plainDoc)+len(want) {
		t.Errorf("merged keys = %d, want capk3s's %d + the fragment's %d", len(doc), len(plainDoc), len(want))
	}
	var cc struct {
		RunCmd []string `json:"runcmd"`
	}
	if err := yaml.Unmarshal(out, &cc); err != nil {
		t.Fatal(err)
	}
	cmds := cc.RunCmd
	if last := cmds[len(cmds)-1]; !strings.Contains(last, sentinelFile) {
		t.Errorf("last runcmd = %q, want the sentinel", last)
	}
}

func TestCloudConfigFragmentIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, fragment, want string
	}{
		{"not a mapping", "- a\n- b\n", "must be a YAML mapping of cloud-config keys"},
		{"a scalar", "timezone", "must be a YAML mapping of cloud-config keys"},
		{"not YAML", "a: [b\n", "must be a YAML mapping of cloud-config keys"},
		{"empty mapping", "{}", "with at least one key"},
		{"runcmd", "runcmd:\n- echo hi\n", `key "runcmd" is written by capk3s: use spec.preK3sCommands and spec.postK3sCommands`},
		{"write_files", "write_files: []\n", `key "write_files" is written by capk3s: use spec.files`},
		{"bootcmd", "bootcmd: [echo]\n", `key "bootcmd" is written by capk3s: use spec.bootCommands`},
		{"module list", "cloud_final_modules: [final_message]\n", `key "cloud_final_modules" may not be set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := minimal(ServerInit)
			in.Spec.AdditionalUserData.CloudConfig = tc.fragment
			_, err := Render(in)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "spec.additionalUserData.cloudConfig") {
				t.Errorf("Render error = %v, want spec.additionalUserData.cloudConfig: ...%s", err, tc.want)
			}
		})
	}
}

const ignitionFragment = `{"ignition":{"version":"3.3.0"},"storage":{"files":[{"path":"/etc/extra.conf","overwrite":true,"contents":{"source":"data:,hello"},"mode":420}]},"systemd":{"units":[{"name":"extra.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"}]}}`

// An Ignition fragment (an older 3.x spec too) is merged by Ignition's rules: its
// file and unit join capk3s's, which stay as they were.
func TestIgnitionFragmentIsMerged(t *testing.T) {
	in := asIgnition(minimal(Agent))
	plain := parseIgnition(t, mustRender(t, in))
	in.Spec.AdditionalUserData.Ignition = ignitionFragment
	merged := parseIgnition(t, mustRender(t, in))
	if got := string(merged.file(t, "/etc/extra.conf").content); got != "hello" {
		t.Errorf("/etc/extra.conf = %q, want hello", got)
	}
	if len(merged.cfg.Storage.Files) != len(plain.cfg.Storage.Files)+1 {
		t.Errorf("files = %d, want capk3s's %d + 1", len(merged.cfg.Storage.Files), len(plain.cfg.Storage.Files))
	}
	var names []string
	for _, u := range merged.units {
		names = append(names, u.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "extra.service") {
		t.Errorf("units = %v, want extra.service among them", names)
	}
	checkBootstrapUnit(t, merged.units)
	if merged.commands(t) != plain.commands(t) {
		t.Errorf("the bootstrap script changed with the fragment")
	}
}

func TestIgnitionFragmentIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, fragment, want string
		users                []bootstrapv1.User
	}{
		{name: "not JSON", fragment: "timezone: x", want: "is not an Ignition config"},
		{name: "no version", fragment: `{"storage":{}}`, want: "is not an Ignition config"},
		{name: "spec 2", fragment: `{"ignition":{"version":"2.3.0"}}`, want: "is not an Ignition config"},
		{name: "replace", fragment: `{"ignition":{"version":"3.4.0","config":{"replace":{"source":"https://example.test/x.ign"}}}}`,
			want: "may not set ignition.config.replace"},
		{name: "bootstrap script", fragment: `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"` + bootstrapScriptPath + `"}]}}`,
			want: "is where capk3s writes its Ignition bootstrap script"},
		{name: "k3s config", fragment: `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/rancher/k3s/config.yaml"}]}}`,
			want: `path "/etc/rancher/k3s/config.yaml" is already written by capk3s's config`},
		{name: "a spec file", fragment: `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/app.conf"}]}}`,
			want: `path "/etc/app.conf" is already written by spec.files`},
		{name: "bootstrap unit", fragment: `{"ignition":{"version":"3.4.0"},"systemd":{"units":[{"name":"` + bootstrapUnitName + `","mask":true}]}}`,
			want: "is capk3s's own"},
		{name: "a spec user", fragment: `{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"ops","groups":["wheel"]}]}}`,
			users: []bootstrapv1.User{{Name: "ops"}}, want: `user "ops" is already set by spec.users`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := asIgnition(minimal(ServerInit))
			in.Spec.Files = []bootstrapv1.File{{Path: "/etc/app.conf", Content: "x"}}
			in.Files = []File{{Path: "/etc/app.conf", Content: "x"}}
			in.Spec.Users = tc.users
			in.Spec.AdditionalUserData.Ignition = tc.fragment
			_, err := Render(in)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "spec.additionalUserData.ignition") {
				t.Errorf("Render error = %v, want spec.additionalUserData.ignition: ...%s", err, tc.want)
			}
		})
	}
}

// Each fragment belongs to one format; the other's is refused, not ignored.
func TestFragmentOfTheOtherFormatIsRefused(t *testing.T) {
	spec := bootstrapv1.KThreesConfigSpec{AdditionalUserData: bootstrapv1.AdditionalUserData{Ignition: ignitionFragment}}
	errs := AdditionalUserDataErrors(&spec, field.NewPath("spec", "additionalUserData"))
	if len(errs) != 1 || errs[0].Field != "spec.additionalUserData.ignition" || !strings.Contains(errs[0].Detail, "is for format ignition") {
		t.Errorf("cloud-config with an Ignition fragment: %v", errs)
	}
	spec = bootstrapv1.KThreesConfigSpec{Format: bootstrapv1.Ignition, AdditionalUserData: bootstrapv1.AdditionalUserData{CloudConfig: "timezone: UTC"}}
	errs = AdditionalUserDataErrors(&spec, field.NewPath("spec", "additionalUserData"))
	if len(errs) != 1 || errs[0].Field != "spec.additionalUserData.cloudConfig" || !strings.Contains(errs[0].Detail, "is for format cloud-config") {
		t.Errorf("Ignition with a cloud-config fragment: %v", errs)
	}
}

func mustRender(t testing.TB, in Input) []byte {
	t.Helper()
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Whatever fragment the checks admit renders into one document that holds capk3s's
// part unchanged and the fragment's keys with the values the fragment gave them.
func FuzzCloudConfigFragment(f *testing.F) {
	f.Add("timezone: Europe/Berlin\n")
	f.Add("locale: \"no\"\nfinal_message: '{{ x }}'\n")
	f.Add("1: one\n? [a, b]\n: c\n")
	f.Add("a: &x {b: 1}\nc: *x\n")
	f.Add("runcmd: []\n")
	f.Add("- a\n")
	f.Fuzz(func(t *testing.T, fragment string) {
		in := minimal(Agent)
		plain := mustRender(t, in)
		in.Spec.AdditionalUserData.CloudConfig = fragment
		if len(AdditionalUserDataErrors(&in.Spec, field.NewPath("spec", "additionalUserData"))) > 0 {
			if _, err := Render(in); err == nil {
				t.Fatalf("Render admits a fragment the checks refuse: %q", fragment)
			}
			return
		}
		out, err := Render(in)
		if err != nil {
			t.Fatalf("Render refuses an admitted fragment %q: %v", fragment, err)
		}
		if !bytes.HasPrefix(out, plain) {
			t.Fatalf("capk3s's part changed with fragment %q", fragment)
		}
		var got, want, ours map[string]any
		if err := yaml.Unmarshal(out, &got); err != nil {
			t.Fatalf("merged output is not YAML: %v\n%s", err, out)
		}
		if err := yaml.Unmarshal([]byte(fragment), &want); err != nil {
			t.Fatal(err)
		}
		if want == nil { // no fragment
			want = map[string]any{}
		}
		if err := yaml.Unmarshal(plain, &ours); err != nil {
			t.Fatal(err)
		}
		for k, v := range ours {
			want[k] = v
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("merged document = %#v, want capk3s's keys and the fragment's %#v", got, want)
		}
	})
}
