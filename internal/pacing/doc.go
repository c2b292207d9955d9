// Package pacing runs a controller's passes for one object at most once per interval.
//
// controller-runtime runs a pass for every event that reaches the queue while the
// object's key is not already queued. While a cluster is being built, one control
// plane or config gets many events in quick succession (CAPI rewrites a Machine's
// status several times, Secrets appear, the pass's own status write comes back), and
// each may start a pass that reads everything again and, if the status moved, writes
// it. With pacing, a request that comes sooner than the interval after the start of
// the object's last pass is not run: it is put back on the queue for the rest of the
// interval, and whatever else arrives meanwhile runs with it as one pass.
//
// CAPI v1.14 does the same for its own controllers (feature gate
// ReconcilerRateLimiting, one pass per object per second), through the controller
// builder in sigs.k8s.io/cluster-api/util/controller. capk3s does not build its
// controllers with that builder: the builder decides by CAPI's process-global feature
// gates, which capk3s's managers do not expose as flags, and which a process that runs
// CAPI core's controllers beside capk3s's (the benchmark, the sandbox, the end-to-end
// tests) shares with them, so capk3s could not be paced or left alone without changing
// CAPI core's controllers too. The builder also brings a consistency store, to which
// capk3s has answers of its own (the control plane's ownwrites.go and
// machine_expectations.go); pacing alone is what is to be measured here.
//
// Pacing is off unless asked for (an interval of 0, the managers' default).
package pacing
