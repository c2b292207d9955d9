// Package statuspatch writes what one reconcile pass changed on an object whose status
// capk3s alone writes (a KThreesControlPlane, a KThreesConfig): its metadata and spec
// in one merge patch, its whole status, conditions included, in another, both guarded
// by the resourceVersion the pass read, each only when it changed.
//
// CAPI's patch helper sends the conditions and the other status fields as two
// requests, and retries a conflicting conditions patch on a fresh read so that
// conditions other controllers own survive. That serves objects several controllers
// write; for these, every extra write is only one more watch event for CAPI's
// controllers. A status write that conflicts is not retried: the pass worked from a
// copy older than the stored one, and the newer write's watch event has already
// queued the pass that computes the status again from it.
package statuspatch
