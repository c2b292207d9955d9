// Package machinenaming renders the names of a control plane's server Machines from
// spec.machineNaming.template, and says why a template cannot be used. The
// controller and the webhook share it, so that a template the webhook accepts is
// one the controller can render.
package machinenaming
