// Package release proves that what a capk3s release publishes works with clusterctl:
// hack/release-manifests.sh builds the components files, metadata.yaml and cluster
// templates; clusterctl, used as a library against a local file repository, installs
// both providers on a real kube-apiserver and generates clusters from every template;
// the generated objects go through capk3s's webhooks; every template variable is
// documented; and the manager images, built twice by internal/imagebuild, are
// reproducible and match the components files.
package release
