// Package inplaceplan holds the control plane's pure decisions about in-place
// updates of its servers: what the CanUpdateMachine request carries, what an
// extension's answer covers (its patches applied to the current objects, compared
// with the desired ones by internal/specdiff), the Machine spec a triggered update
// writes, and how long an update under way holds the pass's scaling and rollout.
//
// It takes plain inputs (CAPI and capk3s API objects, the request and answer of the
// Runtime SDK) and returns verdicts; it holds no client and is tested without an API
// server. internal/controlplane acts on it: it calls the extensions, triggers the
// updates and reports them (inplace*.go there). capk3s's own extension, which
// answers these requests, is internal/inplace.
package inplaceplan
