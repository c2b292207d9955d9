// Package specdiff is capk3s's one engine for telling how two API objects' specs
// differ, as JSON: which fields, and to what. Both sides of an in-place update use
// it: the control plane, to say what no CanUpdateMachine extension covered
// (internal/controlplane/inplaceplan), and capk3s's own extension, to build the
// patches it answers with (internal/inplace). It also holds the one list of Machine
// spec fields an in-place comparison leaves out (InPlaceIgnoredMachineFields), so
// that the two sides never disagree on what counts as a change.
//
// It is pure (no client, no API server) and imports no other capk3s package, so
// every package may import it without an upward import.
package specdiff
