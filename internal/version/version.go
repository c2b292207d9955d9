// Package version holds what a release build stamps into the manager binaries with
// -ldflags -X (see internal/imagebuild); a plain `go build` leaves the defaults.
package version

var (
	// Version is the release tag the binary was built for.
	Version = "dev"
	// Revision is the git commit the binary was built from.
	Revision = "unknown"
)
