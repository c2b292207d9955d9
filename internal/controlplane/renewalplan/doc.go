// Package renewalplan holds the control plane's pure decisions about certificate
// renewal (spec.rollout.before.certificatesExpiryDays): when a Machine's k3s
// certificates are due, whether to restart k3s on it (through the workload cluster's
// system-upgrade-controller), wait for its report, or replace it, which Machines to
// restart first, whether a restart would cost the etcd quorum, and when the next
// decision falls due.
//
// It takes Machines (their certificate reports and the control plane's restart
// records, annotations on them) and the pass's time, and returns verdicts; it holds
// no client and is tested without an API server. internal/controlplane acts on it
// (renewal.go there).
package renewalplan
