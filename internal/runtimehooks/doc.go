// Package runtimehooks is capk3s's client for Cluster API's Runtime SDK: it keeps the
// handlers that ExtensionConfigs register and calls them over HTTPS.
//
// CAPI declares the client as a public interface (exp/runtime/client.Client) but keeps
// its implementation in an internal package, which providers cannot import. The
// control plane needs a client to ask extensions whether a server can be updated in
// place (CanUpdateMachine), and the test stack needs one to run CAPI core's own
// reconcilers with the Runtime SDK on; this package implements the interface for both.
package runtimehooks
