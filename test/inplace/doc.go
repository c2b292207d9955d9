// Package inplace tests capk3s's in-place update extension (internal/inplace) as CAPI
// calls it, over HTTPS, against simulated k3s clusters: the system-upgrade-controller
// stand-in of test/sim upgrades their Nodes. The whole protocol, with CAPI's Machine
// and MachineSet controllers driving it, is test/e2e's.
package inplace
