package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
)

// runCompare runs each provider of o.compare in turn, o.rounds times, alternating,
// each in a child process of this binary (a fresh control plane and a fresh heap), and
// prints every run's report, then the first provider's figures as ratios of each
// other's (the median over the rounds).
func runCompare(w io.Writer, o options, args []string) error {
	providers := strings.Split(o.compare, ",")
	childArgs := withoutFlags(args, "compare", "rounds", "provider", "cpuprofile", "apiserver-cpuprofile", "pprof-addr")
	// Interrupted, each child is asked to stop as well, so that it stops what it started.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	results := map[string][]*result{}
	for round := 1; round <= o.rounds; round++ {
		for _, p := range providers {
			_, _ = fmt.Fprintf(w, "== round %d, provider %s\n", round, p)
			args := append(slices.Clone(childArgs), "-provider="+p)
			if o.cpuProfile != "" {
				args = append(args, fmt.Sprintf("-cpuprofile=%s.%s.%d", o.cpuProfile, p, round))
			}
			if o.apiserverProfile != "" {
				args = append(args, fmt.Sprintf("-apiserver-cpuprofile=%s.%s.%d", o.apiserverProfile, p, round))
			}
			r, err := runChild(ctx, w, args)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round, p, err)
			}
			results[p] = append(results[p], r)
		}
	}
	return printRatios(w, providers, results)
}

// withoutFlags drops the named flags (as -name=v, --name=v, -name v) from args.
func withoutFlags(args []string, names ...string) []string {
	drop := map[string]bool{}
	for _, n := range names {
		drop[n] = true
	}
	var out []string
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if strings.HasPrefix(args[i], "-") && drop[name] {
			if !hasValue && i+1 < len(args) {
				i++
			}
			continue
		}
		out = append(out, args[i])
	}
	return out
}

func runChild(ctx context.Context, w io.Writer, args []string) (*result, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.Stdout = io.MultiWriter(w, &out)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), resultPrefix); ok {
			r := &result{}
			if err := json.Unmarshal([]byte(line), r); err != nil {
				return nil, fmt.Errorf("reading the run's result: %w", err)
			}
			return r, nil
		}
	}
	return nil, fmt.Errorf("the run printed no %q line", strings.TrimSpace(resultPrefix))
}

// figure is one compared quantity of a result.
type figure struct {
	name string
	of   func(*result) float64
}

var figures = []figure{
	{"all ready (s)", func(r *result) float64 { return r.AllReadySeconds }},
	{"p50 per cluster (s)", func(r *result) float64 { return r.P50Seconds }},
	{"p90 per cluster (s)", func(r *result) float64 { return r.P90Seconds }},
	{"next server created after, p50 (s)", func(r *result) float64 { return r.ServerGapP50Seconds }},
	{"writes per cluster", func(r *result) float64 { return r.perCluster(r.Writes) }},
	{"reads per cluster", func(r *result) float64 { return r.perCluster(r.Reads) }},
	{"409 conflicts", func(r *result) float64 { return float64(r.Conflicts) }},
	{"provider's own writes per cluster", func(r *result) float64 { return r.perCluster(r.ProviderWrites) }},
	{"provider's own reads per cluster", func(r *result) float64 { return r.perCluster(r.ProviderReads) }},
	{"provider's own 409s", func(r *result) float64 { return float64(r.ProviderConflicts) }},
	{"idle writes", func(r *result) float64 { return float64(r.IdleWrites) }},
	{"idle reads", func(r *result) float64 { return float64(r.IdleReads) }},
	{"heap after GC (MiB)", func(r *result) float64 { return mib(r.HeapBytes) }},
	{"apiserver RSS (MiB)", func(r *result) float64 { return mib(uint64(max(r.APIServerRSSBytes, 0))) }},
	{"peak heap until ready (MiB)", func(r *result) float64 { return mib(r.PeakHeapBytes) }},
}

// upgradeFigures are compared when the runs had a fleet upgrade (-upgrade).
var upgradeFigures = []figure{
	{"upgrade: all upgraded (s)", upgradeOf(func(u *upgradeResult) float64 { return u.AllDoneSeconds })},
	{"upgrade: p50 per cluster (s)", upgradeOf(func(u *upgradeResult) float64 { return u.P50Seconds })},
	{"upgrade: p90 per cluster (s)", upgradeOf(func(u *upgradeResult) float64 { return u.P90Seconds })},
	{"upgrade: max per cluster (s)", upgradeOf(func(u *upgradeResult) float64 { return u.MaxSeconds })},
	{"upgrade: writes per cluster", func(r *result) float64 { return perClusterOf(r, func(u *upgradeResult) int { return u.Writes }) }},
	{"upgrade: reads per cluster", func(r *result) float64 { return perClusterOf(r, func(u *upgradeResult) int { return u.Reads }) }},
	{"upgrade: 409 conflicts", upgradeOf(func(u *upgradeResult) float64 { return float64(u.Conflicts) })},
	{"upgrade: provider's own writes per cluster", func(r *result) float64 {
		return perClusterOf(r, func(u *upgradeResult) int { return u.ProviderWrites })
	}},
	{"upgrade: provider's own reads per cluster", func(r *result) float64 {
		return perClusterOf(r, func(u *upgradeResult) int { return u.ProviderReads })
	}},
	{"upgrade: provider's own 409s", upgradeOf(func(u *upgradeResult) float64 { return float64(u.ProviderConflicts) })},
	{"upgrade: peak heap (MiB)", upgradeOf(func(u *upgradeResult) float64 { return mib(u.PeakHeapBytes) })},
}

func upgradeOf(f func(*upgradeResult) float64) func(*result) float64 {
	return func(r *result) float64 {
		if r.Upgrade == nil {
			return 0
		}
		return f(r.Upgrade)
	}
}

func perClusterOf(r *result, n func(*upgradeResult) int) float64 {
	if r.Upgrade == nil {
		return 0
	}
	return r.perCluster(n(r.Upgrade))
}

// comparedFigures are the figures of the ratio table: the upgrade's too when a run
// had one.
func comparedFigures(results map[string][]*result) []figure {
	for _, rs := range results {
		for _, r := range rs {
			if r.Upgrade != nil {
				return append(append([]figure(nil), figures...), upgradeFigures...)
			}
		}
	}
	return figures
}

func printRatios(w io.Writer, providers []string, results map[string][]*result) error {
	_, _ = fmt.Fprintf(w, "== medians over the rounds; ratio = %s / other\n", providers[0])
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintf(tw, "figure\t%s", strings.Join(providers, "\t"))
	for _, other := range providers[1:] {
		_, _ = fmt.Fprintf(tw, "\tratio to %s", other)
	}
	_, _ = fmt.Fprintln(tw)
	for _, f := range comparedFigures(results) {
		_, _ = fmt.Fprintf(tw, "%s", f.name)
		vals := make([]float64, len(providers))
		for i, p := range providers {
			vals[i] = median(results[p], f.of)
			_, _ = fmt.Fprintf(tw, "\t%.1f", vals[i])
		}
		for i := range providers[1:] {
			_, _ = fmt.Fprintf(tw, "\t%s", ratio(vals[0], vals[i+1]))
		}
		_, _ = fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func ratio(a, b float64) string {
	if b == 0 {
		if a == 0 {
			return "="
		}
		return "n/a"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func median(rs []*result, of func(*result) float64) float64 {
	if len(rs) == 0 {
		return 0
	}
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = of(r)
	}
	sort.Float64s(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}
