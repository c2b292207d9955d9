package minisystemd

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Restart policies understood in Restart=.
const (
	RestartNo        = "no"
	RestartAlways    = "always"
	RestartOnFailure = "on-failure"
)

// Command is one Exec*= line: the words to run and whether a failure of it is
// ignored (the leading "-").
type Command struct {
	Argv          []string
	IgnoreFailure bool
}

// Unit is the parsed subset of a service unit file that the supervisor acts
// on. Keys outside this subset are accepted and ignored.
type Unit struct {
	Name        string // "k3s.service"
	Path        string
	Description string
	Type        string // exec, simple or notify
	// EnvironmentFiles holds paths with specifiers already expanded; a leading
	// "-" was turned into Optional.
	EnvironmentFiles []EnvFileRef
	// Environment holds KEY=VALUE assignments from Environment= lines.
	Environment  []string
	ExecStartPre []Command
	ExecStart    *Command
	Restart      string
	RestartDelay time.Duration
	// KillProcessOnly is KillMode=process: stop signals only the main process.
	KillProcessOnly bool
	// TimeoutStart of zero means no timeout.
	TimeoutStart time.Duration
	TimeoutStop  time.Duration
	// LimitNOFILE holds soft and hard limits when LimitNOFILE= was given.
	LimitNOFILE *[2]uint64
	WantedBy    []string
}

// EnvFileRef is one EnvironmentFile= entry.
type EnvFileRef struct {
	Path     string
	Optional bool
}

// Defaults as systemd documents them.
const (
	defaultRestartDelay = 100 * time.Millisecond
	defaultTimeoutStart = 90 * time.Second
	defaultTimeoutStop  = 90 * time.Second
)

// LoadUnit reads and parses the unit file at path for the unit name.
func LoadUnit(name, path string) (*Unit, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading unit %s: %w", name, err)
	}
	u, err := ParseUnit(name, string(data))
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	u.Path = path
	return u, nil
}

// ParseUnit parses unit file text for the unit name (with .service).
func ParseUnit(name, text string) (*Unit, error) {
	u := &Unit{
		Name:         name,
		Type:         "simple",
		Restart:      RestartNo,
		RestartDelay: defaultRestartDelay,
		TimeoutStart: defaultTimeoutStart,
		TimeoutStop:  defaultTimeoutStop,
	}
	section := ""
	for _, line := range logicalLines(text) {
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %q: missing '='", line)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		var err error
		switch section {
		case "Unit":
			if key == "Description" {
				u.Description = value
			}
		case "Service":
			err = u.setService(key, value)
		case "Install":
			if key == "WantedBy" {
				if value == "" {
					u.WantedBy = nil
				}
				u.WantedBy = append(u.WantedBy, strings.Fields(value)...)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("[%s] %s=%s: %w", section, key, value, err)
		}
	}
	if u.ExecStart == nil {
		return nil, fmt.Errorf("unit %s has no ExecStart=", name)
	}
	return u, nil
}

// logicalLines joins backslash-continued lines (the backslash becomes a
// space, as in systemd) and drops blank and comment lines.
func logicalLines(text string) []string {
	var out []string
	var cur strings.Builder
	continuing := false
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			// Comments inside a continuation are skipped too.
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\"))
			cur.WriteString(" ")
			continuing = true
			continue
		}
		cur.WriteString(line)
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
		continuing = false
	}
	if continuing {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (u *Unit) setService(key, value string) error {
	switch key {
	case "Type":
		switch value {
		case "simple", "exec", "notify":
			u.Type = value
		case "":
			u.Type = "simple"
		default:
			return fmt.Errorf("unsupported Type %q", value)
		}
	case "EnvironmentFile":
		if value == "" {
			u.EnvironmentFiles = nil
			return nil
		}
		ref := EnvFileRef{}
		if strings.HasPrefix(value, "-") {
			ref.Optional, value = true, value[1:]
		}
		ref.Path = u.expandSpecifiers(value)
		u.EnvironmentFiles = append(u.EnvironmentFiles, ref)
	case "Environment":
		if value == "" {
			u.Environment = nil
			return nil
		}
		words, err := SplitWords(u.expandSpecifiers(value))
		if err != nil {
			return err
		}
		for _, w := range words {
			if !strings.Contains(w, "=") {
				return fmt.Errorf("assignment %q has no '='", w)
			}
		}
		u.Environment = append(u.Environment, words...)
	case "ExecStartPre":
		if value == "" {
			u.ExecStartPre = nil
			return nil
		}
		c, err := u.parseCommand(value)
		if err != nil {
			return err
		}
		u.ExecStartPre = append(u.ExecStartPre, *c)
	case "ExecStart":
		if value == "" {
			u.ExecStart = nil
			return nil
		}
		if u.ExecStart != nil {
			return fmt.Errorf("more than one ExecStart= for a %s service", u.Type)
		}
		c, err := u.parseCommand(value)
		if err != nil {
			return err
		}
		u.ExecStart = c
	case "Restart":
		switch value {
		case RestartNo, RestartAlways, RestartOnFailure:
			u.Restart = value
		default:
			return fmt.Errorf("unsupported Restart %q", value)
		}
	case "RestartSec":
		d, err := ParseDuration(value)
		if err != nil {
			return err
		}
		u.RestartDelay = d
	case "KillMode":
		switch value {
		case "process":
			u.KillProcessOnly = true
		case "control-group", "mixed", "":
			u.KillProcessOnly = false
		default:
			return fmt.Errorf("unsupported KillMode %q", value)
		}
	case "TimeoutStartSec", "TimeoutStopSec", "TimeoutSec":
		d, err := ParseDuration(value)
		if err != nil {
			return err
		}
		if key != "TimeoutStopSec" {
			u.TimeoutStart = d
		}
		if key != "TimeoutStartSec" {
			u.TimeoutStop = d
		}
	case "LimitNOFILE":
		l, err := parseLimit(value)
		if err != nil {
			return err
		}
		u.LimitNOFILE = l
	}
	// Everything else (User=root, Delegate=, TasksMax=, other Limit*=, ...)
	// is accepted and ignored: the machine runs everything as root in one
	// cgroup namespace the layer owns.
	return nil
}

// parseCommand splits an Exec*= value: prefixes, specifiers, words.
func (u *Unit) parseCommand(value string) (*Command, error) {
	c := &Command{}
	useArgv0 := false
prefixes:
	for value != "" {
		switch value[0] {
		case '-':
			c.IgnoreFailure = true
		case '@':
			useArgv0 = true
		case '+', '!', ':':
			// Privilege and expansion modifiers: everything runs as root here.
		default:
			break prefixes
		}
		value = value[1:]
	}
	words, err := SplitWords(u.expandSpecifiers(value))
	if err != nil {
		return nil, err
	}
	if useArgv0 {
		// "@path argv0 args...": drop the argv0 word; the kernel's argv[0]
		// matters to nothing the layer runs.
		if len(words) < 2 {
			return nil, fmt.Errorf("'@' command %q needs an argv[0]", value)
		}
		words = append(words[:1], words[2:]...)
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	c.Argv = words
	return c, nil
}

// expandSpecifiers replaces %n, %N and %% (the only specifiers k3s's unit
// uses, plus their escape).
func (u *Unit) expandSpecifiers(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	r := strings.NewReplacer("%%", "%", "%n", u.Name, "%N", strings.TrimSuffix(u.Name, ".service"))
	return r.Replace(s)
}
