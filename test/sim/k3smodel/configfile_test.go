package k3smodel

import (
	"reflect"
	"strings"
	"testing"
)

func v136(t *testing.T) Minor {
	t.Helper()
	r, _ := ParseRelease("v1.36.2+k3s1")
	m, err := r.Known()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestReadConfigUnknownKey(t *testing.T) {
	m := v136(t)
	file := []byte("server: https://cp:6443\nflannel-cni-conf-dir: /x\n")
	if _, err := ReadConfig(m, RoleAgent, file); !IsExit(err) || !strings.Contains(err.Error(), "flag provided but not defined: -flannel-cni-conf-dir") {
		t.Errorf("agent with an unknown key: err = %v, want k3s agent to exit naming the key", err)
	}
	cfg, err := ReadConfig(m, RoleServer, file)
	if err != nil {
		t.Fatalf("server with an unknown key: %v, want the key dropped", err)
	}
	if !reflect.DeepEqual(cfg.Dropped, []string{"flannel-cni-conf-dir"}) || cfg.Set("flannel-cni-conf-dir") {
		t.Errorf("server: Dropped = %v, values %v", cfg.Dropped, cfg.Values)
	}
	if cfg.Last("server") != "https://cp:6443" {
		t.Errorf("server = %q", cfg.Last("server"))
	}
}

func TestReadConfigValueTypes(t *testing.T) {
	m := v136(t)
	for _, c := range []struct {
		role, file string
		fatal      bool
	}{
		{RoleAgent, `lb-server-port: "abc"`, true},
		{RoleServer, `lb-server-port: "abc"`, true}, // a server checks values too
		{RoleAgent, `lb-server-port: 6444`, false},
		{RoleAgent, `lb-server-port: "0x1920"`, false}, // base 0, as Go's flag package
		{RoleAgent, `lb-server-port: 1.5`, true},
		{RoleAgent, `lb-server-port:`, true}, // null is the empty string
		{RoleAgent, `selinux: "yes"`, true},  // a quoted YAML "yes" is not a Go bool
		{RoleAgent, `selinux: yes`, false},   // yaml.v2 reads an unquoted yes as true
		{RoleServer, `etcd-s3-timeout: 5m`, false},
		{RoleServer, `etcd-s3-timeout: 5`, true},
		{RoleServer, `https-listen-port: [6443, x]`, true}, // every element is checked
		{RoleAgent, `node-label: [a=b, c=d]`, false},
	} {
		_, err := ReadConfig(m, c.role, []byte(c.file))
		if fatal := IsExit(err); fatal != c.fatal || (!fatal && err != nil) {
			t.Errorf("%s %q: err = %v, want fatal=%v", c.role, c.file, err, c.fatal)
		}
	}
}

func TestReadConfigAppendsAndAliases(t *testing.T) {
	m := v136(t)
	cfg, err := ReadConfig(m, RoleAgent,
		[]byte("node-label: [a=1]\ns: https://one:6443\n"),
		[]byte("node-label+: [b=2]\nkubelet-arg+: [x=y]\n"),
		[]byte("node-label: c=3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Values["node-label"]; !reflect.DeepEqual(got, []string{"c=3"}) {
		t.Errorf("node-label = %v: a later key without + replaces", got)
	}
	if got := cfg.Values["kubelet-arg"]; !reflect.DeepEqual(got, []string{"x=y"}) {
		t.Errorf("kubelet-arg = %v", got)
	}
	if cfg.Last("server") != "https://one:6443" {
		t.Errorf("the alias s did not set server: %v", cfg.Values)
	}
	cfg, _ = ReadConfig(m, RoleAgent, []byte("node-label: [a=1]\n"), []byte("node-label+: [b=2]\n"))
	if got := cfg.Values["node-label"]; !reflect.DeepEqual(got, []string{"a=1", "b=2"}) {
		t.Errorf("node-label+ = %v, want appended", got)
	}
}

func TestCheckNodeLabels(t *testing.T) {
	for labels, fatal := range map[string]bool{
		"node-role.kubernetes.io/worker=true": true,
		"kubernetes.io/role=x":                true,
		"foo.k8s.io/x=y":                      true,
		"node.kubernetes.io/pool=a":           false,
		"x.kubelet.kubernetes.io/y=z":         false,
		"topology.kubernetes.io/zone=a":       false,
		"example.com/tier=web":                false,
		"tier=web,env=prod":                   false,
		"tier=not valid":                      true,
	} {
		err := CheckNodeLabels(RoleAgent, []string{labels})
		if IsExit(err) != fatal {
			t.Errorf("%s: err = %v, want fatal=%v", labels, err, fatal)
		}
	}
}

func TestCheckServerFlags(t *testing.T) {
	m := v136(t)
	for file, fatal := range map[string]bool{
		"disable-etcd: true\ncluster-init: true\n":                                true,
		"disable-etcd: true\nserver: https://cp:6443\n":                           false,
		"disable-etcd: true\nserver: https://cp:6443\ndatastore-endpoint: x://\n": true,
		"cluster-reset-restore-path: /s\n":                                        true,
		"cluster-reset-restore-path: /s\ncluster-reset: true\n":                   false,
	} {
		cfg, err := ReadConfig(m, RoleServer, []byte(file))
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckServerFlags(cfg); IsExit(err) != fatal {
			t.Errorf("%q: err = %v, want fatal=%v", file, err, fatal)
		}
	}
}
