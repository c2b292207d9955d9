package v1beta2

// ImageK3sReleaseAnnotation on a SimMachine (or its template's metadata) names the k3s
// release its machine image carries on disk, as an air-gapped image does. It counts
// only when the install skips the download (INSTALL_K3S_SKIP_DOWNLOAD): then that
// binary runs, whatever INSTALL_K3S_VERSION asks, and the Node reports it. Unset, the
// image carries the release the install asks for.
const ImageK3sReleaseAnnotation = "infrastructure.sim.capk3s.io/image-k3s-release"
