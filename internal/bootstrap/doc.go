// Package bootstrap is the KThreesConfig side of capk3s: it decides what a machine's
// k3s is given. Today it holds the join-token options (jointoken.go), read from the
// cluster's token Secret through token.Lookup; the reconciler that renders the
// bootstrap data Secret builds on them.
package bootstrap
