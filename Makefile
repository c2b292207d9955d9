# capk3s — build, generate, lint and test.
#
#   make test      everything CI runs: tools (built once, cached), stale-generated-files
#                  check, go vet, golangci-lint, all tests on a real kube-apiserver.
#   make fuzz      every fuzz target for FUZZTIME (10m) each (make test: 5s each).
#   make generate  deepcopy, CRDs and RBAC from the Go markers.
#   make sandbox   capk3s on simulated k3s machines, with a demo cluster (SANDBOX_FLAGS=...).
#   make bench     the scale benchmark, capk3s beside CAPI's kubeadm providers (BENCH_FLAGS=...).
#   make test-k3s  the end-to-end layer on real k3s (K3S_BIN=... K3S_INSTALL_SH=..., root; not in make test).
#   make release-manifests  what a release publishes, into out/ (clusterctl's files).
#   make images    both manager images (linux/amd64 + linux/arm64 OCI layouts) and their
#                  SBOMs into out/images/, without a container engine.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

TOOLS_DIR ?= $(HOME)/.cache/capk3s/bin
export CAPK3S_TOOLS_DIR := $(TOOLS_DIR)
export KUBEBUILDER_ASSETS := $(TOOLS_DIR)

CONTROLLER_GEN := $(TOOLS_DIR)/controller-gen
GOLANGCI_LINT := $(TOOLS_DIR)/golangci-lint
KUSTOMIZE := $(TOOLS_DIR)/kustomize

# Release: manager images are $(REGISTRY)/capk3s-{bootstrap,control-plane}-controller:$(TAG).
REGISTRY ?= ghcr.io/capk3s
TAG ?= dev
RELEASE_DIR ?= out
DOCKER ?= docker

# Test flags: -count=1 so that integration tests always talk to a real apiserver,
# -p 2 to match this project's 2-core machines (each package starts its own apiserver).
GO_TEST_FLAGS ?= -count=1 -p 2 -timeout 20m

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: tools
tools: ## Build every tool into $(TOOLS_DIR) (cached; a cold build takes ~10 minutes), install PostgreSQL and CA certificates if missing, and build test/bootos's Debian roots and Ignition (cached, ~5 and ~10 minutes cold; root only).
	hack/ensure-tools.sh
	hack/ensure-postgres.sh
	hack/ensure-ca-certificates.sh
	if [[ $$(id -u) == 0 ]]; then hack/bootos/build-roots.sh bookworm trixie && hack/ensure-tools.sh ignition; fi

.PHONY: generate
generate: ## Regenerate deepcopy, CRDs and RBAC.
	hack/ensure-tools.sh controller-gen
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/... paths=./test/sim/api/... paths=./test/realk3s/api/...
	$(CONTROLLER_GEN) crd paths=./api/bootstrap/... output:crd:dir=config/bootstrap/crd/bases
	$(CONTROLLER_GEN) crd paths=./api/controlplane/... output:crd:dir=config/controlplane/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths=./internal/bootstrap/... paths=./internal/webhooks/bootstrap/... paths=./internal/manager/... output:rbac:dir=config/bootstrap/rbac
	$(CONTROLLER_GEN) webhook paths=./internal/webhooks/bootstrap/... output:webhook:dir=config/bootstrap/webhook
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths=./internal/controlplane/... paths=./internal/etcdsnapshot/... paths=./internal/manager/... output:rbac:dir=config/controlplane/rbac
	$(CONTROLLER_GEN) webhook paths=./internal/webhooks/controlplane/... output:webhook:dir=config/controlplane/webhook
	$(CONTROLLER_GEN) crd paths=./test/sim/api/... output:crd:dir=test/sim/config/crd/bases
	$(CONTROLLER_GEN) crd paths=./test/realk3s/api/... output:crd:dir=test/realk3s/config/crd/bases

# k3s's flags per supported minor, read from a git mirror of k3s (K3S_MIRROR, a bare
# repository with upstream history) at the "Update to v1.X.Y" commits below. Run by hand
# when a minor is added; not part of generate (CI has no k3s source). Both tables are
# written from the one extraction; each package states its own rules over its copy.
K3S_MIRROR ?=
K3S_MINORS ?= 34=0b241dca61a0d0f187988b394d9c1e560d6f6d64,35=595cf680cf4c5d8ebb18ad7959f6d2fae04fa91c,36=25e8ee776429004210a63446fd639b859fc17092

.PHONY: k3s-flags
k3s-flags: ## Re-read k3s's flags per minor from a k3s mirror (K3S_MIRROR=path/to/k3s.git [K3S_MINORS=34=<commit>,...]).
	@if [[ -z "$(K3S_MIRROR)" ]]; then echo "K3S_MIRROR is not set"; exit 1; fi
	go run ./hack/k3sflags -mirror $(K3S_MIRROR) -minors $(K3S_MINORS) -pkg k3s -out internal/k3s/flags_generated.go
	go run ./hack/k3sflags -mirror $(K3S_MIRROR) -minors $(K3S_MINORS) -pkg k3smodel -out test/sim/k3smodel/flags_generated.go

# Where generated files live, for the staleness check.
GENERATED := api config test/sim/api test/sim/config test/realk3s/api test/realk3s/config

.PHONY: verify-generate
verify-generate: generate ## Fail if generated files differ from what is committed.
	@if [[ -n "$$(git status --porcelain -- $(GENERATED))" ]]; then \
		echo "Generated files are stale; run 'make generate' and commit:"; \
		git status --porcelain -- $(GENERATED); git diff --stat -- $(GENERATED); exit 1; \
	fi

.PHONY: vet
vet: ## go vet the project and the benchmark's module (hack/tools only pins binaries' sources; it has no code to vet).
	go vet ./...
	cd test/bench && go vet ./...

.PHONY: lint
lint: ## golangci-lint (config in .golangci.yml).
	hack/ensure-tools.sh golangci-lint
	$(GOLANGCI_LINT) run --allow-parallel-runners ./...
	cd test/bench && $(GOLANGCI_LINT) run --allow-parallel-runners ./...

.PHONY: fmt-check
fmt-check: ## Fail if any Go file is not gofmt-ed.
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [[ -n "$$out" ]]; then echo "not gofmt-ed:"; echo "$$out"; exit 1; fi

.PHONY: build
build: ## Build the manager binaries into bin/.
	go build -o bin/ ./cmd/...

.PHONY: release-manifests
release-manifests: ## Write the components files, metadata.yaml and cluster templates into $(RELEASE_DIR)/.
	hack/ensure-tools.sh kustomize
	KUSTOMIZE=$(KUSTOMIZE) REGISTRY=$(REGISTRY) TAG=$(TAG) hack/release-manifests.sh $(RELEASE_DIR)

# test/release builds the images itself with the same code (internal/imagebuild), so
# 'make test' does not depend on this target.
.PHONY: images
images: ## Build both manager images, multi-arch, as OCI layouts with SBOMs into $(RELEASE_DIR)/images/ (no container engine).
	hack/ensure-ca-certificates.sh
	go run ./hack/images --registry $(REGISTRY) --tag $(TAG) --out $(RELEASE_DIR)/images

.PHONY: docker-build
docker-build: ## Build both manager images into a Docker engine (needs one; 'make images' does not).
	$(DOCKER) build --build-arg MANAGER=bootstrap-manager -t $(REGISTRY)/capk3s-bootstrap-controller:$(TAG) .
	$(DOCKER) build --build-arg MANAGER=controlplane-manager -t $(REGISTRY)/capk3s-control-plane-controller:$(TAG) .

.PHONY: sandbox
sandbox: ## Run capk3s locally on simulated k3s machines and bring up a demo cluster (Ctrl-C stops).
	hack/ensure-tools.sh etcd kube-apiserver kube-controller-manager
	go run ./cmd/capk3s sandbox $(SANDBOX_FLAGS)

# The real-k3s layer (test/realk3s): every machine runs the k3s binary given here,
# installed by its install.sh from capk3s's bootstrap data under the real cloud-init.
# Root only, and alone on the machine (real k3s servers lose etcd elections under
# load). Not part of 'make test'. K3S_BIN_UPGRADE is a second release, for upgrades.
K3S_BIN ?=
K3S_INSTALL_SH ?=
K3S_BIN_UPGRADE ?=
K3S_TEST_FLAGS ?= -timeout 90m
# The S3 server the etcd snapshot scenarios save to: an S3 gateway on a plain folder, with
# SigV4 authentication, as k3s's S3 client talks to any S3 service.
VERSITYGW_VERSION ?= v1.8.0

.PHONY: test-k3s
test-k3s: ## The end-to-end layer on real k3s (root): K3S_BIN=path/to/k3s K3S_INSTALL_SH=path/to/install.sh [K3S_BIN_UPGRADE=path/to/other/k3s] [K3S_TEST_FLAGS='-run TestX -timeout 90m'].
	@if [[ -z "$(K3S_BIN)" || -z "$(K3S_INSTALL_SH)" ]]; then echo "K3S_BIN and K3S_INSTALL_SH must name a k3s release binary and its install.sh (docs/testing.md)"; exit 1; fi
	hack/ensure-tools.sh etcd kube-apiserver kube-controller-manager
	hack/realk3s/build-node-root.sh
	[[ -x $(TOOLS_DIR)/versitygw ]] || GOBIN=$(TOOLS_DIR) go install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)
	export CAPK3S_S3_GATEWAY=$(TOOLS_DIR)/versitygw CAPK3S_K3S_BIN=$(abspath $(K3S_BIN)) CAPK3S_K3S_INSTALL_SH=$(abspath $(K3S_INSTALL_SH)) \
		CAPK3S_K3S_BIN_UPGRADE=$(if $(K3S_BIN_UPGRADE),$(abspath $(K3S_BIN_UPGRADE))); \
	rc=0; go test -count=1 -v ./test/realk3s/ $(K3S_TEST_FLAGS) || rc=$$?; go run ./test/realk3s/cmd/cleanup; exit $$rc

# The benchmark (test/bench, its own module) compares capk3s with CAPI's kubeadm
# providers on the same wiring; docs/performance.md explains the figures.
BENCH_FLAGS ?= -compare capk3s,kcp -clusters 100 -servers 3 -agents 2 -upgrade -timeout 40m

.PHONY: bench
bench: ## Scale benchmark, capk3s beside KubeadmControlPlane on the same harness (BENCH_FLAGS=..., see docs/performance.md).
	hack/ensure-tools.sh etcd kube-apiserver
	cd test/bench && go run . $(BENCH_FLAGS)

# The smoke runs the benchmark's unit tests and capk3s once at 3 single-server clusters, to
# stay short; 'go vet' and 'make lint' build the rest (docs/performance.md).
.PHONY: bench-smoke
bench-smoke: ## The benchmark's unit tests, then the benchmark once at 3 capk3s clusters: it must finish and report (no timing is checked).
	hack/ensure-tools.sh etcd kube-apiserver
	cd test/bench && go test -count=1 ./...
	cd test/bench && go run . -provider capk3s -clusters 3 -idle 5s -timeout 10m

# The chaos scenario (test/chaos): its CI form is one round under `make unit`; the long
# form runs CHAOS_ROUNDS rounds for each seed and prints each run's summary.
CHAOS_SEEDS ?= 1 2 3
CHAOS_ROUNDS ?= 3

.PHONY: chaos
chaos: ## Long chaos run: managers killed, apiserver restarted (CHAOS_SEEDS="1 2 3" CHAOS_ROUNDS=3).
	hack/ensure-tools.sh etcd kube-apiserver kube-controller-manager
	@set -e; for seed in $(CHAOS_SEEDS); do \
		log=$$(mktemp -t capk3s-chaos-$$seed.XXXXXX); \
		echo "chaos: seed $$seed, $(CHAOS_ROUNDS) rounds (log: $$log)"; \
		if ! go test ./test/chaos/ -run TestChaosManagers -count=1 -timeout 90m -v \
			-chaos.seed=$$seed -chaos.rounds=$(CHAOS_ROUNDS) >$$log 2>&1; then \
			grep -v '^[IWE][0-9]' $$log | tail -60; exit 1; fi; \
		sed -n '/chaos summary/,/^--- /p' $$log; \
	done

.PHONY: unit
unit: ## Run the tests (needs the tools; 'make test' builds them).
	go test $(GO_TEST_FLAGS) ./...

# Fuzzing (hack/fuzz.sh holds the list of targets): FUZZTIME per target, one target
# after the other, one summary line each. 'make test' runs each for FUZZ_SMOKE_TIME
# after the seed corpora that 'go test' replays anyway.
FUZZTIME ?= 10m
FUZZ_SMOKE_TIME ?= 5s

.PHONY: fuzz
fuzz: ## Fuzz every target for FUZZTIME (10m) each; a finding is left in the package's testdata/fuzz/.
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh

.PHONY: fuzz-smoke
fuzz-smoke: ## Fuzz every target for FUZZ_SMOKE_TIME (5s) each, as 'make test' does.
	FUZZTIME=$(FUZZ_SMOKE_TIME) hack/fuzz.sh

.PHONY: test
test: tools verify-generate fmt-check vet lint build unit bench-smoke fuzz-smoke ## Everything CI runs.
