#!/usr/bin/env bash
# Builds the binaries that generation, linting and the tests need into a cache outside the
# work tree (CAPK3S_TOOLS_DIR, default $HOME/.cache/capk3s/bin). Each binary is built from
# source through the Go module proxy, because this project's machines cannot download
# prebuilt ones. A binary is rebuilt only when its pinned version changes: the version is
# part of its file name, and a stable symlink points at it.
#
# Usage: hack/ensure-tools.sh [tool ...]   (default: all)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${CAPK3S_TOOLS_DIR:-$HOME/.cache/capk3s/bin}"
mkdir -p "$TOOLS_DIR"

# One build at a time per cache: two runs (two work trees, or make targets run in
# parallel) would otherwise write the same temporary file. The lock is released when
# this script exits.
exec 9>"$TOOLS_DIR/.lock"
flock 9

KUBERNETES_VERSION="v1.37.2"
ETCD_VERSION="v3.7.0"             # the etcd that k8s.io/kubernetes $KUBERNETES_VERSION requires
CONTROLLER_GEN_VERSION="v0.23.0"
KUSTOMIZE_VERSION="v5.8.2"
GOLANGCI_LINT_VERSION="v2.15.0"
IGNITION_VERSION="v2.24.0"       # test/bootos applies Ignition configs with it (module hack/bootos/ignition)

log() { printf '[tools] %s\n' "$*" >&2; }

# install NAME VERSION BUILD-COMMAND... : runs the build command with $OUT set to the
# versioned file, unless that file exists already.
install() {
	local name="$1" version="$2"
	shift 2
	local out="$TOOLS_DIR/$name-$version"
	if [[ ! -x "$out" ]]; then
		log "building $name $version (first time only; kube-* take a few minutes)..."
		local start=$SECONDS
		OUT="$out.tmp" "$@"
		mv "$out.tmp" "$out"
		log "built $name $version in $((SECONDS - start))s"
	fi
	ln -sfn "$name-$version" "$TOOLS_DIR/$name"
}

build_kube() { # $1: command package below k8s.io/kubernetes/cmd
	local minor="${KUBERNETES_VERSION#v1.}"
	minor="${minor%%.*}"
	(cd "$ROOT/hack/tools" && go build -trimpath -ldflags "-s -w \
		-X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION \
		-X k8s.io/component-base/version.gitMajor=1 \
		-X k8s.io/component-base/version.gitMinor=$minor" \
		-o "$OUT" "k8s.io/kubernetes/cmd/$1")
}
build_etcd() {
	(cd "$ROOT/hack/tools" && go build -trimpath -ldflags "-s -w" -o "$OUT" go.etcd.io/etcd/server/v3)
}
# Ignition is cgo (libblkid) and its command is its module's internal package, which
# only a build inside a module that requires Ignition can name. Distributions set
# Ignition's defaults at link time (internal/distro); this build is for images without
# SELinux: with relabeling on, the files stage needs the root's SELinux policy.
build_ignition() {
	"$ROOT/hack/bootos/ensure-libblkid.sh"
	(cd "$ROOT/hack/bootos/ignition" && CGO_ENABLED=1 go build -trimpath \
		-ldflags "-X github.com/coreos/ignition/v2/internal/version.Raw=$IGNITION_VERSION \
		-X github.com/coreos/ignition/v2/internal/distro.selinuxRelabel=false" \
		-o "$OUT" github.com/coreos/ignition/v2/internal)
}
# go_install MODULE-PATH/CMD VERSION: 'go install' into a temporary GOBIN, then moved to $OUT.
go_install() {
	local tmp
	tmp="$(mktemp -d)"
	GOBIN="$tmp" go install "$1@$2"
	# The installed binary is the only file; its name is not always the path's last
	# element (kustomize/v5 installs "kustomize").
	mv "$tmp"/* "$OUT"
	rm -rf "$tmp"
}

ensure() {
	case "$1" in
	etcd) install etcd "$ETCD_VERSION" build_etcd ;;
	kube-apiserver) install kube-apiserver "$KUBERNETES_VERSION" build_kube kube-apiserver ;;
	kube-controller-manager) install kube-controller-manager "$KUBERNETES_VERSION" build_kube kube-controller-manager ;;
	controller-gen) install controller-gen "$CONTROLLER_GEN_VERSION" go_install sigs.k8s.io/controller-tools/cmd/controller-gen "$CONTROLLER_GEN_VERSION" ;;
	kustomize) install kustomize "$KUSTOMIZE_VERSION" go_install sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION" ;;
	golangci-lint) install golangci-lint "$GOLANGCI_LINT_VERSION" go_install github.com/golangci/golangci-lint/v2/cmd/golangci-lint "$GOLANGCI_LINT_VERSION" ;;
	ignition) install ignition "$IGNITION_VERSION-norelabel" build_ignition ;;
	*) log "unknown tool: $1"; exit 2 ;;
	esac
}

ALL=(controller-gen kustomize golangci-lint etcd kube-apiserver kube-controller-manager)
if [[ $# -eq 0 ]]; then set -- "${ALL[@]}"; fi
for tool in "$@"; do ensure "$tool"; done
