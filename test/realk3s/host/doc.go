// Package host makes and removes the real-k3s layer's machines on this host. A
// machine is what a cloud would give a Cluster API provider, built from Linux
// namespaces rather than a hypervisor:
//
//   - its own network namespace on the layer's bridge, with its own address and a
//     default route through the host's side of the bridge;
//   - its own mount, PID, UTS, IPC and cgroup namespaces: k3s and the kubelet write
//     fixed host paths (/run/k3s, /var/lib/kubelet, /etc/rancher/node) and manage
//     cgroups, so two machines must not see each other's;
//   - a root file system that is an overlay of a Debian root (hack/realk3s), whose
//     upper layer takes every write, with the k3s binary and install script the layer
//     was given at /usr/local/bin/k3s and /opt/install.sh, as a user's image carries
//     them for an air-gapped install;
//   - a first boot that runs the real cloud-init on the machine's bootstrap data from
//     a NoCloud seed, under a small service supervisor standing in for systemd
//     (test/realk3s/minisystemd).
//
// The kubelet changes kernel settings that are not namespaced (kernel.panic,
// vm.overcommit_memory...): the layer saves them before the first machine and puts
// them back when it stops, and Cleanup does it for a run that died.
package host
