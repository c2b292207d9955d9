// Package images builds the container images that the real-k3s test layer's
// machines need, without a registry: the machines have no network to pull from, but
// k3s imports every tarball in /var/lib/rancher/k3s/agent/images/ into its containerd
// when its agent starts.
//
// Two images are enough for the scenarios: the pause image that k3s's kubelet starts
// as every pod's sandbox, and a workload image (a small HTTP server) for the pods the
// scenarios run. Each is one static Go binary from this directory (pause/, workload/),
// built with `go build` at call time and laid as a single layer on an empty image,
// written as a docker-archive tarball tagged with the image's reference. Like
// internal/imagebuild's manager images, the layers do not depend on the build machine
// (sorted entries, one fixed time, numeric owners).
package images
