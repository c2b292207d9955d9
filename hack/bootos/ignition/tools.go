//go:build tools

// Package ignition pins the Ignition that test/bootos applies Ignition configs
// with. It is a module of its own so that Ignition's dependencies never meet the
// project's: hack/ensure-tools.sh builds Ignition's main package,
// github.com/coreos/ignition/v2/internal (cgo, against libblkid), from here. go.sum
// holds what that build needs; `go mod tidy` only sees this file's import and would
// drop most of it, so refresh it with `GOFLAGS=-mod=mod go build` of that package.
package ignition

import _ "github.com/coreos/ignition/v2/config"
