// Package inplace is capk3s's k3s in-place update extension: the Runtime Extension
// handlers CAPI calls under its InPlaceUpdates feature (CanUpdateMachine,
// CanUpdateMachineSet, UpdateMachine), served by the control-plane manager.
//
// What k3s can apply to a running machine is decided by pure functions (decision.go,
// version.go), unit-tested as a table. The update itself is handed to the workload
// cluster's system-upgrade-controller (SUC): one upgrade.cattle.io/v1 Plan per Machine
// (plan.go), followed until the Machine's Node runs the new version (update.go). A
// workload cluster without SUC gets no in-place update: CanUpdate… covers nothing, so
// CAPI and the control plane roll the machines out instead.
package inplace
