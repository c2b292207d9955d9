package bootstrap

import (
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// DefaultSpec normalizes a KThreesConfigSpec in place. It is idempotent: a defaulted
// spec comes back unchanged, which the update checks rely on (they compare a
// defaulted old spec with the new one).
//
// It only writes the version's leading "v" (k3s.WithLeadingV: "1.31.4+k3s1" and
// "v1.31.4+k3s1" are stored, compared and rendered as the same version; surrounding
// whitespace is not trimmed, so the schema's pattern refuses it). Everything else is
// left as written on purpose: filling in, say, file permissions or encodings here
// would store a choice that belongs to the renderer (and to k3s's own defaults), turn
// a later change of those defaults into a spec difference, and, for templates, into
// an immutability violation or a rollout of every machine.
func DefaultSpec(spec *bootstrapv1.KThreesConfigSpec) {
	spec.Version = k3s.WithLeadingV(spec.Version)
}
