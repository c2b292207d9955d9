package minisystemd

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ParseDuration parses a systemd time span: "5", "5s", "100ms", "1min 30s",
// "infinity". A bare number is seconds. "infinity" and 0 both mean no limit,
// returned as 0.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "infinity" {
		return 0, nil
	}
	units := []struct {
		suffix string
		d      time.Duration
	}{
		{"usec", time.Microsecond}, {"us", time.Microsecond},
		{"msec", time.Millisecond}, {"ms", time.Millisecond},
		{"seconds", time.Second}, {"second", time.Second}, {"sec", time.Second}, {"s", time.Second},
		{"minutes", time.Minute}, {"minute", time.Minute}, {"min", time.Minute}, {"m", time.Minute},
		{"hours", time.Hour}, {"hour", time.Hour}, {"hr", time.Hour}, {"h", time.Hour},
		{"days", 24 * time.Hour}, {"day", 24 * time.Hour}, {"d", 24 * time.Hour},
	}
	var total time.Duration
	rest := s
	if rest == "" {
		return 0, fmt.Errorf("empty time span")
	}
	for rest != "" {
		rest = strings.TrimLeft(rest, " ")
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("bad time span %q", s)
		}
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil {
			return 0, fmt.Errorf("bad time span %q: %w", s, err)
		}
		rest = strings.TrimLeft(rest[i:], " ")
		unit := time.Second
		for _, cand := range units {
			if strings.HasPrefix(rest, cand.suffix) {
				next := rest[len(cand.suffix):]
				if next == "" || next[0] == ' ' || next[0] >= '0' && next[0] <= '9' {
					unit, rest = cand.d, next
					break
				}
			}
		}
		total += time.Duration(n * float64(unit))
	}
	return total, nil
}

// parseLimit parses "N", "infinity" or "soft:hard".
func parseLimit(s string) (*[2]uint64, error) {
	one := func(v string) (uint64, error) {
		if v == "infinity" {
			return nrOpen(), nil
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bad limit %q: %w", v, err)
		}
		return n, nil
	}
	softS, hardS, pair := strings.Cut(strings.TrimSpace(s), ":")
	soft, err := one(softS)
	if err != nil {
		return nil, err
	}
	hard := soft
	if pair {
		if hard, err = one(hardS); err != nil {
			return nil, err
		}
	}
	return &[2]uint64{soft, hard}, nil
}

// nrOpen is the kernel's ceiling for RLIMIT_NOFILE, which is what systemd
// uses for "infinity" on this limit.
func nrOpen() uint64 {
	data, err := os.ReadFile("/proc/sys/fs/nr_open")
	if err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64); err == nil {
			return n
		}
	}
	return 1 << 20
}
