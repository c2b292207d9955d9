package main

import (
	"context"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// heapPeak samples the process's live heap (runtime/metrics, which needs no
// stop-the-world as runtime.ReadMemStats does) every interval and keeps the largest
// sample since the last reset. The heap after a forced GC says what the fleet costs at
// rest; the peak says what a manager must be sized for while it works, e.g. during a
// fleet upgrade, when old and new machines exist side by side.
type heapPeak struct {
	peak atomic.Uint64
}

const heapSampleInterval = 250 * time.Millisecond

// heapObjectsMetric is the memory occupied by live and not yet swept heap objects.
const heapObjectsMetric = "/memory/classes/heap/objects:bytes"

func startHeapPeak(ctx context.Context) *heapPeak {
	h := &heapPeak{}
	go func() {
		sample := []metrics.Sample{{Name: heapObjectsMetric}}
		t := time.NewTicker(heapSampleInterval)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				v := sample[0].Value.Uint64()
				for {
					old := h.peak.Load()
					if v <= old || h.peak.CompareAndSwap(old, v) {
						break
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return h
}

// take returns the peak since the last take and starts a new one.
func (h *heapPeak) take() uint64 { return h.peak.Swap(0) }
