// Package machinenaming renders the names of a control plane's server Machines from
// spec.machineNaming.template, and says why a template cannot be used. The
// controller and the webhook share it, so that a template the webhook accepts is
// one the controller can render. A template is read with text/template's parser but
// never executed: it may hold only text and the three variables, so that rendering
// or refusing it costs no more than its length, whatever a tenant writes.
package machinenaming
