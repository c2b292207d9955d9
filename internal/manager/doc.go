// Package manager holds what the capk3s manager binaries share: the command
// line options every Cluster API provider exposes, their validation, the
// translation into controller-runtime manager options, and Run, which starts
// a manager. Keeping this out of the main packages lets both binaries behave
// identically and lets the wiring be unit tested without a cluster.
package manager
