// Package serverplan decides, as pure data, what the KThreesControlPlane controller
// does with its servers in a pass: whether it adds one, removes one or waits (and
// why), which server goes and in which failure domain a new one goes, whether a
// server is up to date, and whether an unhealthy server is remediated now. It reads
// only what it is given (the control plane, its server Machines, the Nodes a pass
// read, the clock) and changes nothing; the controller in the parent package reads
// the cluster, acts on the verdicts and reports them.
//
// Scaling, rollout and remediation are one package because they share their rules:
// the same preflight checks hold a scale-up, a rollout step and a remediation's
// replacement, the same notion of a healthy etcd member guards quorum for all
// three, and a remediation in progress changes which step comes next.
package serverplan
