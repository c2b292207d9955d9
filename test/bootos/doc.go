// Package bootos runs capk3s's bootstrap data through the real consumers: each
// cloud-config rendered by internal/cloudinit is booted by Debian's cloud-init
// (bookworm's 22.4 and trixie's 25.1) in a throwaway root, all four stages from a
// NoCloud seed, and what landed is compared with what was asked: every file byte
// for byte with its mode and owner, users and groups, time servers, disks (the
// partitioning and mkfs calls recorded), mounts, the order of the commands, the
// k3s install and the bootstrap sentinel, cloud-init's final status and its schema
// check. Data that cannot be applied must end without the sentinel.
//
// The same cases rendered as Ignition are applied by the real Ignition (v2.24.0,
// built by hack/ensure-tools.sh from the module hack/bootos/ignition): its
// fetch-offline and files stages run as from the initramfs, outside the throwaway
// root and pointed at it (testdata/ignite.sh), then the capk3s units the presets
// enable run as systemd's first boot would (testdata/firstboot.sh). Every boot's
// config.yaml, as the install found it, is read by the simulator's k3s model, and a
// boot whose k3s would exit or skip a key fails.
//
// The roots are Debian installs built once by hack/bootos/build-roots.sh and
// cached outside the work tree ($HOME/.cache/capk3s/roots, or CAPK3S_ROOTS); a
// test only ever mounts one read-only under an overlay whose upper layer is the
// test's temporary directory, in fresh namespaces (testdata/enter.sh), so the
// host's root file system and disks are never touched. The k3s install script,
// k3s itself, systemctl, service, curl and ssh-keygen are stand-ins that record
// how they were called (testdata/standins).
//
// The tests need root (mounts and namespaces), as `make test` on the project's
// machines and CI has; elsewhere they skip and say why.
package bootos
