package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// upgradeResult is what the fleet upgrade phase measured (-upgrade): its times, and the
// management API requests from the first bump to the last cluster upgraded.
type upgradeResult struct {
	To string `json:"to"`
	// AllDone is from the first bump to the last cluster upgraded; P50/P90/Max are per
	// cluster, from its own control plane's bump.
	AllDoneSeconds float64 `json:"allDoneSeconds"`
	P50Seconds     float64 `json:"p50Seconds"`
	P90Seconds     float64 `json:"p90Seconds"`
	MaxSeconds     float64 `json:"maxSeconds"`

	Reads             int               `json:"reads"`
	Writes            int               `json:"writes"`
	Conflicts         int               `json:"conflicts"`
	Events            int               `json:"events"`
	Requests          []countEntry      `json:"requests"`
	ConflictRequests  []countEntry      `json:"conflictRequests"`
	Controllers       []controllerCount `json:"controllers"`
	ProviderReads     int               `json:"providerReads"`
	ProviderWrites    int               `json:"providerWrites"`
	ProviderConflicts int               `json:"providerConflicts"`
	ProviderRequests  []countEntry      `json:"providerRequests"`

	// PeakHeapBytes is the largest live heap sampled during the upgrade.
	PeakHeapBytes uint64 `json:"peakHeapBytes"`
}

// measureUpgrade runs the fleet upgrade on the clusters in names and returns its figures.
func measureUpgrade(ctx context.Context, cfg *rest.Config, c client.Client, h *harness, ready *readiness, peak *heapPeak,
	p provider, namespace string, o options, names []string, logf func(string)) (*upgradeResult, error) {
	u, err := newFleetUpgrade(cfg, c, ready, p, namespace, o.shape)
	if err != nil {
		return nil, err
	}
	logf(fmt.Sprintf("fleet upgrade of %d clusters to %s", len(names), u.to))
	before := h.counter.snapshot()
	peak.take()
	waitCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	took, start, err := u.run(waitCtx, names, func(n, total int) { logf(fmt.Sprintf("%d/%d clusters upgraded", n, total)) })
	if err != nil {
		created := map[string]time.Time{}
		for _, n := range names {
			created[n] = start
		}
		ready.explainStall(ctx, os.Stderr, missing(created, took), 5, h.describeNodes(ctx, namespace))
		return nil, err
	}
	allDone := time.Since(start)
	counts := h.counter.snapshot().since(before)
	own := counts.of(p.controllers())
	p50, p90, maxD := percentiles(took)
	logf(fmt.Sprintf("all upgraded after %s", allDone.Round(time.Second)))
	return &upgradeResult{
		To: u.to, AllDoneSeconds: allDone.Seconds(), P50Seconds: p50.Seconds(), P90Seconds: p90.Seconds(), MaxSeconds: maxD.Seconds(),
		Reads: counts.Reads, Writes: counts.Writes, Conflicts: counts.Conflicts, Events: counts.Events,
		Requests: counts.sorted(), ConflictRequests: sortedEntries(counts.ConflictsByKey), Controllers: counts.byController(),
		ProviderReads: own.Reads, ProviderWrites: own.Writes, ProviderConflicts: own.Conflicts, ProviderRequests: sortedByController(own.ByKey),
		PeakHeapBytes: peak.take(),
	}, nil
}

// print writes the upgrade's part of a run's report.
func (u *upgradeResult) print(w io.Writer, clusters int) {
	per := func(n int) float64 { return float64(n) / float64(max(clusters, 1)) }
	_, _ = fmt.Fprintf(w, "fleet upgrade to %s:\n", u.To)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k string, v any) { _, _ = fmt.Fprintf(tw, "  %s\t%v\n", k, v) }
	row("all upgraded after", seconds(u.AllDoneSeconds))
	row("per cluster p50 / p90 / max", fmt.Sprintf("%s / %s / %s", seconds(u.P50Seconds), seconds(u.P90Seconds), seconds(u.MaxSeconds)))
	row("reads / writes per cluster", fmt.Sprintf("%.1f / %.1f", per(u.Reads), per(u.Writes)))
	row("409 conflicts", u.Conflicts)
	row("provider's own reads / writes per cluster", fmt.Sprintf("%.1f / %.1f", per(u.ProviderReads), per(u.ProviderWrites)))
	row("provider's own 409 answers", u.ProviderConflicts)
	row("events", u.Events)
	row("peak heap", fmt.Sprintf("%.1f MiB", mib(u.PeakHeapBytes)))
	_ = tw.Flush()
	printRequests(w, "requests during the upgrade (top 15)", u.Requests, 15)
	printRequests(w, "409 answers during the upgrade, by request", u.ConflictRequests, 10)
	printControllers(w, "requests during the upgrade, by controller", u.Controllers)
	printRequests(w, "the provider's own requests during the upgrade", u.ProviderRequests, 25)
}
