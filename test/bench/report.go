package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// result is what one run of one provider measured. It is printed as a table and as
// one JSON line starting with resultPrefix, which the compare mode reads back.
type result struct {
	Provider    string `json:"provider"`
	Clusters    int    `json:"clusters"`
	Servers     int32  `json:"servers"`
	Agents      int32  `json:"agents"`
	Concurrency int    `json:"concurrency"`
	// MinPassIntervalSeconds is -capk3s-min-pass-interval in a capk3s run (0: off).
	MinPassIntervalSeconds float64 `json:"minPassIntervalSeconds,omitempty"`

	// AllReady is from the first creation to the last cluster ready; P50/P90/Max are
	// per cluster, from its own creation.
	AllReadySeconds float64 `json:"allReadySeconds"`
	P50Seconds      float64 `json:"p50Seconds"`
	P90Seconds      float64 `json:"p90Seconds"`
	MaxSeconds      float64 `json:"maxSeconds"`

	// Requests until all were ready (events apart), and 409 answers among them.
	Reads     int `json:"reads"`
	Writes    int `json:"writes"`
	Conflicts int `json:"conflicts"`
	// ConflictRequests are the 409 answers by request: a Conflict on an update or
	// patch, or an AlreadyExists on a create.
	ConflictRequests []countEntry `json:"conflictRequests"`
	Events           int          `json:"events"`
	Requests         []countEntry `json:"requests"`

	// The idle window after readiness.
	IdleSeconds  float64      `json:"idleSeconds"`
	IdleReads    int          `json:"idleReads"`
	IdleWrites   int          `json:"idleWrites"`
	IdleRequests []countEntry `json:"idleRequests"`

	// The same until ready, by controller, and the provider's own requests: those made
	// in a reconcile of one of its controllers (attribution.go).
	Controllers       []controllerCount `json:"controllers"`
	ProviderReads     int               `json:"providerReads"`
	ProviderWrites    int               `json:"providerWrites"`
	ProviderConflicts int               `json:"providerConflicts"`
	ProviderRequests  []countEntry      `json:"providerRequests"`
	IdleControllers   []controllerCount `json:"idleControllers"`

	HeapBytes         uint64 `json:"heapBytes"`
	APIServerRSSBytes int64  `json:"apiserverRSSBytes"`
	// ServerGapP50Seconds is the median time between the creations of a cluster's
	// consecutive servers (readiness.serverGaps); 0 with one server.
	ServerGapP50Seconds float64 `json:"serverGapP50Seconds,omitempty"`
	// PeakHeapBytes is the largest live heap sampled until all were ready.
	PeakHeapBytes uint64 `json:"peakHeapBytes"`

	// Upgrade is the fleet upgrade phase's result, when the run had one (-upgrade).
	Upgrade *upgradeResult `json:"upgrade,omitempty"`
}

const resultPrefix = "BENCH-RESULT "

func (r *result) perCluster(n int) float64 { return float64(n) / float64(max(r.Clusters, 1)) }

// print writes the table, then the JSON line.
func (r *result) print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k string, v any) { _, _ = fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	row("provider", r.Provider)
	row("clusters (servers+agents each)", fmt.Sprintf("%d (%d+%d)", r.Clusters, r.Servers, r.Agents))
	row("provider concurrency", r.Concurrency)
	if r.MinPassIntervalSeconds > 0 {
		row("capk3s min pass interval", seconds(r.MinPassIntervalSeconds))
	}
	row("all ready after", seconds(r.AllReadySeconds))
	row("per cluster p50 / p90 / max", fmt.Sprintf("%s / %s / %s", seconds(r.P50Seconds), seconds(r.P90Seconds), seconds(r.MaxSeconds)))
	if r.Servers > 1 {
		row("next server created after (p50)", seconds(r.ServerGapP50Seconds))
	}
	row("reads / writes per cluster", fmt.Sprintf("%.1f / %.1f", r.perCluster(r.Reads), r.perCluster(r.Writes)))
	row("409 conflicts", r.Conflicts)
	row("provider's own reads / writes per cluster", fmt.Sprintf("%.1f / %.1f", r.perCluster(r.ProviderReads), r.perCluster(r.ProviderWrites)))
	row("provider's own 409 answers", r.ProviderConflicts)
	row("events", r.Events)
	row("idle window", seconds(r.IdleSeconds))
	row("idle reads / writes", fmt.Sprintf("%d / %d", r.IdleReads, r.IdleWrites))
	row("heap after GC", fmt.Sprintf("%.1f MiB (%.0f KiB per cluster)", mib(r.HeapBytes), float64(r.HeapBytes)/1024/float64(max(r.Clusters, 1))))
	row("kube-apiserver RSS", fmt.Sprintf("%.0f MiB", mib(uint64(max(r.APIServerRSSBytes, 0)))))
	row("peak heap until ready", fmt.Sprintf("%.1f MiB", mib(r.PeakHeapBytes)))
	if err := tw.Flush(); err != nil {
		return err
	}
	printRequests(w, "requests until ready (top 15)", r.Requests, 15)
	printRequests(w, "409 answers until ready, by request", r.ConflictRequests, 10)
	printControllers(w, "requests until ready, by controller", r.Controllers)
	printRequests(w, "the provider's own requests until ready", r.ProviderRequests, 25)
	printRequests(w, "requests in the idle window", r.IdleRequests, 15)
	printControllers(w, "requests in the idle window, by controller", r.IdleControllers)
	if r.Upgrade != nil {
		r.Upgrade.print(w, r.Clusters)
	}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s%s\n", resultPrefix, line)
	return err
}

func printRequests(w io.Writer, title string, entries []countEntry, limit int) {
	_, _ = fmt.Fprintf(w, "%s:\n", title)
	if len(entries) == 0 {
		_, _ = fmt.Fprintln(w, "  none")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, e := range entries {
		if i == limit {
			_, _ = fmt.Fprintf(tw, "  ...\t%d more\n", len(entries)-limit)
			break
		}
		if e.Controller != "" {
			_, _ = fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\n", e.Controller, e.Verb, e.Resource, e.Count)
		} else {
			_, _ = fmt.Fprintf(tw, "  %s\t%s\t%d\n", e.Verb, e.Resource, e.Count)
		}
	}
	_ = tw.Flush()
}

func printControllers(w io.Writer, title string, counts []controllerCount) {
	_, _ = fmt.Fprintf(w, "%s (reads, writes, 409s):\n", title)
	if len(counts) == 0 {
		_, _ = fmt.Fprintln(w, "  none")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range counts {
		_, _ = fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\n", c.Controller, c.Reads, c.Writes, c.Conflicts)
	}
	_ = tw.Flush()
}

func seconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(100 * time.Millisecond).String()
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
