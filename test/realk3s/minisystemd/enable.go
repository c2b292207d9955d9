package minisystemd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Enablement is kept on disk as systemd keeps it: a symlink per WantedBy=
// target in <unitdir>/<target>.wants/. It survives a restart of the machine,
// and init starts the enabled units at boot.

// enable links the unit into the .wants directories of its WantedBy=
// targets. arg is a unit name or the path of a unit file. It returns the
// lines systemctl prints.
func (m *Manager) enable(arg string) ([]string, error) {
	name := normalizeUnit(arg)
	unitPath := filepath.Join(m.cfg.UnitDir, name)
	var out []string
	if strings.Contains(arg, "/") && filepath.Clean(arg) != unitPath {
		// A unit file outside the unit directory is linked into it first.
		if err := os.Symlink(arg, unitPath); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("linking %s: %w", arg, err)
		}
		out = append(out, fmt.Sprintf("Created symlink %s → %s.", unitPath, arg))
	}
	data, err := os.ReadFile(unitPath)
	if err != nil {
		return nil, fmt.Errorf("unit file %s does not exist: %w", name, err)
	}
	targets := wantedBy(string(data))
	if len(targets) == 0 {
		return append(out, fmt.Sprintf("The unit file %s has no [Install] WantedBy=, so it is not enabled.", name)), nil
	}
	for _, t := range targets {
		dir := filepath.Join(m.cfg.UnitDir, t+".wants")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", dir, err)
		}
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(unitPath, link); err != nil {
			return nil, fmt.Errorf("enabling %s: %w", name, err)
		}
		out = append(out, fmt.Sprintf("Created symlink %s → %s.", link, unitPath))
	}
	m.logf("enabled %s", name)
	return out, nil
}

// wantedBy reads the [Install] WantedBy= targets without needing the rest of
// the unit to be valid.
func wantedBy(text string) []string {
	var targets []string
	section := ""
	for _, line := range logicalLines(text) {
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[]")
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		if section == "Install" && strings.TrimSpace(k) == "WantedBy" {
			targets = append(targets, strings.Fields(v)...)
		}
	}
	return targets
}

func (m *Manager) wantsLinks(name string) []string {
	links, _ := filepath.Glob(filepath.Join(m.cfg.UnitDir, "*.wants", normalizeUnit(name)))
	return links
}

// disable removes the unit's .wants links.
func (m *Manager) disable(arg string) ([]string, error) {
	var out []string
	links := m.wantsLinks(arg)
	if _, err := os.Stat(filepath.Join(m.cfg.UnitDir, normalizeUnit(arg))); err != nil && len(links) == 0 {
		return nil, fmt.Errorf("unit file %s does not exist", normalizeUnit(arg))
	}
	for _, link := range links {
		if err := os.Remove(link); err != nil {
			return out, fmt.Errorf("disabling %s: %w", arg, err)
		}
		out = append(out, "Removed "+link+".")
	}
	m.logf("disabled %s", normalizeUnit(arg))
	return out, nil
}

// isEnabled returns "enabled" or "disabled", or an error when the unit has
// no unit file.
func (m *Manager) isEnabled(arg string) (string, error) {
	if len(m.wantsLinks(arg)) > 0 {
		return "enabled", nil
	}
	if _, err := os.Stat(filepath.Join(m.cfg.UnitDir, normalizeUnit(arg))); err != nil {
		return "", fmt.Errorf("%w: %s", errNoUnit, normalizeUnit(arg))
	}
	return "disabled", nil
}

// enabledUnits lists the units enabled in any target whose unit file is in
// the unit directory, for boot. The Debian roots enable units of their own
// (cloud-init's, getty, ...) from /lib/systemd/system: those are not this
// supervisor's to run (the boot command runs cloud-init) and are skipped.
func (m *Manager) enabledUnits() []string {
	links, _ := filepath.Glob(filepath.Join(m.cfg.UnitDir, "*.target.wants", "*.service"))
	seen := map[string]bool{}
	var names []string
	for _, l := range links {
		n := filepath.Base(l)
		if seen[n] {
			continue
		}
		seen[n] = true
		if _, err := os.Stat(filepath.Join(m.cfg.UnitDir, n)); err != nil {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
