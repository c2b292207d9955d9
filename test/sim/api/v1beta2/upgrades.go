package v1beta2

// SystemUpgradeControllerAnnotation set to "true" on a SimCluster installs the
// system-upgrade-controller on its workload cluster, as a user would with a
// ClusterResourceSet: the Plan kind (upgrade.cattle.io/v1), SUC's Deployment, and the
// simulator's stand-in for SUC, which acts on Plans (see test/sim/suc.go). Without it
// (the default) the workload cluster has none, and in-place updates are refused.
const SystemUpgradeControllerAnnotation = "infrastructure.sim.capk3s.io/system-upgrade-controller"

// UpgradeFailAnnotation on a workload cluster's Node makes the stand-in's upgrade Job
// on that Node fail, with the annotation's value as the error: the Plan then reports
// Complete=False, reason JobFailed, as SUC does.
const UpgradeFailAnnotation = "infrastructure.sim.capk3s.io/upgrade-fail"
