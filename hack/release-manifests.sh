#!/usr/bin/env bash
# Writes what a capk3s release publishes into OUT_DIR (default out/): the two
# providers' components files as clusterctl expects them, the in-place update
# extension's ExtensionConfig, the optional NetworkPolicies, metadata.yaml and the
# cluster templates. The manager
# images are REGISTRY/capk3s-<provider>-controller:TAG.
# test/release runs this same script, so what the tests install is what ships.
#
# Usage: hack/release-manifests.sh [OUT_DIR]
# Environment: KUSTOMIZE (default $CAPK3S_TOOLS_DIR/kustomize), REGISTRY, TAG.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_DIR="$(mkdir -p "${1:-$ROOT/out}" && cd "${1:-$ROOT/out}" && pwd)"
KUSTOMIZE="${KUSTOMIZE:-${CAPK3S_TOOLS_DIR:-$HOME/.cache/capk3s/bin}/kustomize}"
REGISTRY="${REGISTRY:-ghcr.io/capk3s}"
TAG="${TAG:-dev}"

# build PROVIDER-DIR IMAGE-NAME COMPONENTS-FILE: kustomize through a throw-away
# overlay that only sets the image, so config/ is never edited.
build() {
	local overlay
	# Inside config/, because kustomize takes only relative paths to bases.
	overlay="$(mktemp -d "$ROOT/config/.release-overlay.XXXXXX")"
	trap 'rm -rf "$overlay"' RETURN
	cat >"$overlay/kustomization.yaml" <<-YAML
		resources:
		- ../$1/default
		images:
		- name: ghcr.io/capk3s/$2
		  newName: $REGISTRY/$2
		  newTag: "$TAG"
	YAML
	"$KUSTOMIZE" build "$overlay" >"$OUT_DIR/$3"
}

build bootstrap capk3s-bootstrap-controller bootstrap-components.yaml
build controlplane capk3s-control-plane-controller control-plane-components.yaml
# Opt-in, applied by the user once CAPI runs with RuntimeSDK (see the file).
cp "$ROOT/config/controlplane/inplace/extensionconfig.yaml" "$OUT_DIR/control-plane-inplace-extension.yaml"
# Opt-in, applied by the user where the network plugin enforces NetworkPolicy (see the file).
cp "$ROOT/config/networkpolicy/networkpolicy.yaml" "$OUT_DIR/capk3s-networkpolicy.yaml"
cp "$ROOT/metadata.yaml" "$OUT_DIR/metadata.yaml"
cp "$ROOT"/templates/*.yaml "$OUT_DIR/"
echo "release manifests in $OUT_DIR" >&2
