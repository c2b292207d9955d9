package minisystemd

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// k3sShapedUnit has the shape of the unit k3s's install.sh writes for a
// server (written here from its documented keys, not copied).
const k3sShapedUnit = `[Unit]
Description=Lightweight Kubernetes
Documentation=https://k3s.io
Wants=network-online.target
After=network-online.target

[Install]
WantedBy=multi-user.target

[Service]
Type=notify
EnvironmentFile=-/etc/default/%N
EnvironmentFile=-/etc/sysconfig/%N
EnvironmentFile=-/etc/systemd/system/k3s.service.env
KillMode=process
Delegate=yes
User=root
# Having non-zero Limit*s causes performance problems due to accounting overhead
LimitNOFILE=1048576
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
TimeoutStartSec=0
Restart=always
RestartSec=5s
ExecStartPre=-/sbin/modprobe br_netfilter
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/local/bin/k3s \
    server \
	'--config' \
	'/etc/rancher/k3s/config.yaml' \
	"--node-label=a=b c" \

`

func TestParseK3sShapedUnit(t *testing.T) {
	u, err := ParseUnit("k3s.service", k3sShapedUnit)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Description", u.Description, "Lightweight Kubernetes"},
		{"Type", u.Type, "notify"},
		{"EnvironmentFiles", u.EnvironmentFiles, []EnvFileRef{
			{Path: "/etc/default/k3s", Optional: true},
			{Path: "/etc/sysconfig/k3s", Optional: true},
			{Path: "/etc/systemd/system/k3s.service.env", Optional: true},
		}},
		{"KillProcessOnly", u.KillProcessOnly, true},
		{"LimitNOFILE", *u.LimitNOFILE, [2]uint64{1048576, 1048576}},
		{"TimeoutStart", u.TimeoutStart, time.Duration(0)},
		{"TimeoutStop", u.TimeoutStop, 90 * time.Second},
		{"Restart", u.Restart, RestartAlways},
		{"RestartSec", u.RestartDelay, 5 * time.Second},
		{"ExecStartPre", u.ExecStartPre, []Command{
			{Argv: []string{"/sbin/modprobe", "br_netfilter"}, IgnoreFailure: true},
			{Argv: []string{"/sbin/modprobe", "overlay"}, IgnoreFailure: true},
		}},
		{"ExecStart", u.ExecStart.Argv, []string{"/usr/local/bin/k3s", "server",
			"--config", "/etc/rancher/k3s/config.yaml", "--node-label=a=b c"}},
		{"WantedBy", u.WantedBy, []string{"multi-user.target"}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

func TestParseUnitRejects(t *testing.T) {
	for name, text := range map[string]string{
		"no ExecStart":      "[Service]\nType=notify\n",
		"unknown Type":      "[Service]\nType=forking\nExecStart=/bin/true\n",
		"bad RestartSec":    "[Service]\nRestartSec=soon\nExecStart=/bin/true\n",
		"unbalanced quote":  "[Service]\nExecStart=/bin/echo 'a\n",
		"two ExecStart":     "[Service]\nExecStart=/bin/true\nExecStart=/bin/false\n",
		"line without '='":  "[Service]\nExecStart\n",
		"unknown KillMode":  "[Service]\nKillMode=none-such\nExecStart=/bin/true\n",
		"bad environment":   "[Service]\nEnvironment=NOEQUALS\nExecStart=/bin/true\n",
		"bad LimitNOFILE":   "[Service]\nLimitNOFILE=lots\nExecStart=/bin/true\n",
		"unknown Restart=":  "[Service]\nRestart=sometimes\nExecStart=/bin/true\n",
		"'@' without argv0": "[Service]\nExecStart=@/bin/true\n",
	} {
		if _, err := ParseUnit("x.service", text); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"5s": 5 * time.Second, "5": 5 * time.Second, "100ms": 100 * time.Millisecond,
		"1min 30s": 90 * time.Second, "2m": 2 * time.Minute, "1h": time.Hour,
		"0": 0, "infinity": 0, "1.5s": 1500 * time.Millisecond, "250us": 250 * time.Microsecond,
	} {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "s", "five"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) succeeded", bad)
		}
	}
}

func TestSplitWords(t *testing.T) {
	for in, want := range map[string][]string{
		`/bin/sh -c 'echo a  b'`:   {"/bin/sh", "-c", "echo a  b"},
		`a "b c" d`:                {"a", "b c", "d"},
		`  a\ b   c  `:             {"a b", "c"},
		`x"y z"w`:                  {"xy zw"},
		`a 'it"s' "say \"hi\""`:    {"a", `it"s`, `say "hi"`},
		`tab\tseparated\nnewline`:  {"tab\tseparated\nnewline"},
		`'--flag' '--other=value'`: {"--flag", "--other=value"},
	} {
		got, err := SplitWords(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("SplitWords(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestExpandCommand(t *testing.T) {
	env := map[string]string{"FLAGS": "--a --b", "DIR": "/x"}
	got := expandCommand([]string{"/bin/prog", "$FLAGS", "--dir=${DIR}/y", "$$HOME", "${UNSET}"}, env)
	want := []string{"/bin/prog", "--a", "--b", "--dir=/x/y", "$HOME", ""}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("expandCommand = %q, want %q", got, want)
	}
}

func TestParseEnvFile(t *testing.T) {
	text := strings.Join([]string{
		"# comment",
		"; another",
		"",
		"K3S_TOKEN='se cret'",
		`K3S_URL="https://10.0.0.1:6443"`,
		`QUOTED="say \"hi\" \$x"`,
		"PLAIN=  value with spaces  ",
		"ESCAPED=a\\ b",
		"CONT=one\\",
		"two",
		"EMPTY=",
		`MIXED='it'"'"'s' `,
		`JOINED="a b"c\ d'e'`,
	}, "\n")
	got, err := ParseEnvFile(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"K3S_TOKEN=se cret",
		"K3S_URL=https://10.0.0.1:6443",
		`QUOTED=say "hi" $x`,
		"PLAIN=value with spaces",
		"ESCAPED=a b",
		"CONT=onetwo",
		"EMPTY=",
		"MIXED=it's",
		"JOINED=a bc de",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseEnvFile =\n%q\nwant\n%q", got, want)
	}
	for _, bad := range []string{"NOVALUE", "1BAD=x", "Q='open"} {
		if _, err := ParseEnvFile(bad); err == nil {
			t.Errorf("ParseEnvFile(%q) succeeded", bad)
		}
	}
}

func TestNormalizeUnit(t *testing.T) {
	for in, want := range map[string]string{
		"k3s": "k3s.service", "k3s.service": "k3s.service",
		"/etc/systemd/system/k3s-agent.service": "k3s-agent.service",
	} {
		if got := normalizeUnit(in); got != want {
			t.Errorf("normalizeUnit(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseSystemctl(t *testing.T) {
	req, quiet, err := parseSystemctl([]string{"--no-block", "is-active", "--quiet", "k3s"})
	if err != nil || req.Verb != "is-active" || !quiet || !reflect.DeepEqual(req.Units, []string{"k3s"}) {
		t.Errorf("got %+v quiet=%v err=%v", req, quiet, err)
	}
	req, _, err = parseSystemctl([]string{"kill", "-s", "HUP", "--kill-whom", "main", "k3s"})
	if err != nil || req.Signal != "HUP" || !reflect.DeepEqual(req.Units, []string{"k3s"}) {
		t.Errorf("got %+v err=%v", req, err)
	}
	req, _, err = parseSystemctl([]string{"enable", "--now", "--signal=TERM", "k3s"})
	if err != nil || !req.Now || req.Signal != "TERM" {
		t.Errorf("got %+v err=%v", req, err)
	}
	if _, _, err := parseSystemctl([]string{"--quiet"}); err == nil {
		t.Errorf("no verb accepted")
	}
}
