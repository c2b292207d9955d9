// Package restoreplan decides, as pure data, what a KThreesEtcdRestore does next:
// from the restore's recorded phase and what exists now (the control plane, its
// server Machines, the snapshot), never from memory of an earlier pass. The
// controller that acts on the decisions lives in package etcdrestore; the
// KThreesControlPlane controller asks Pauses whether a restore holds its servers.
//
// A restore runs in phases: Pending (preconditions; refused while another
// operation runs), DeletingServers (every server without the restore's mark is
// deleted; the workload API goes down), RestoringFirstServer (one marked server
// restores the snapshot with cluster-reset), JoiningServers (the control plane,
// no longer held, joins the others) and Succeeded. The phase is written before the
// action it allows, so a manager killed at any point resumes from the phase and
// what it finds.
package restoreplan
