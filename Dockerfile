# One image per manager: docker build --build-arg MANAGER=controlplane-manager .
# (make docker-build builds both). The binary is static, so the final image needs
# nothing but distroless's CA certificates and non-root user.
ARG GO_IMAGE=golang:1.26

FROM ${GO_IMAGE} AS builder
ARG MANAGER=bootstrap-manager
ARG TARGETOS=linux
ARG TARGETARCH
WORKDIR /workspace
RUN case "${MANAGER}" in bootstrap-manager|controlplane-manager) ;; \
	*) echo "MANAGER must be bootstrap-manager or controlplane-manager, not '${MANAGER}'" >&2; exit 1 ;; esac
# Dependencies first, so that source edits reuse this layer.
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
	go build -trimpath -ldflags "-s -w" -o /out/manager ./cmd/${MANAGER}

FROM gcr.io/distroless/static:nonroot
COPY --from=builder /out/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
