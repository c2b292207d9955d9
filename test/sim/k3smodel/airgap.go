package k3smodel

import "fmt"

// Which k3s the install script leaves on a machine, read from install.sh at v1.34.9,
// v1.35.4 and v1.36.2 (the same in all three):
//
//   - INSTALL_K3S_SKIP_DOWNLOAD=true or =binary skips the download: download_and_verify
//     only checks that ${BIN_DIR}/k3s is executable and returns, and the release named
//     by INSTALL_K3S_VERSION is never read (get_release_version, its only reader, is
//     not called). The k3s that runs is the binary the image carries.
//     (INSTALL_K3S_BIN_DIR_READ_ONLY=true sets INSTALL_K3S_SKIP_DOWNLOAD=true too.)
//   - Otherwise the script downloads INSTALL_K3S_VERSION's binary.

// SkipsDownload says whether INSTALL_K3S_SKIP_DOWNLOAD (and
// INSTALL_K3S_BIN_DIR_READ_ONLY) make the install script keep the binary on disk.
func SkipsDownload(skipDownload, binDirReadOnly string) bool {
	return skipDownload == "true" || skipDownload == "binary" || binDirReadOnly == "true"
}

// InstalledRelease is the k3s release that runs after the install script: the one
// asked for, or, when the download is skipped, the one on disk (onDisk "" means the
// machine's image has no k3s binary, and the script fails).
func InstalledRelease(asked string, skipsDownload bool, onDisk string) (string, error) {
	if !skipsDownload {
		return asked, nil
	}
	if onDisk == "" {
		return "", fmt.Errorf("the install script skips the download, and the image carries no k3s binary: \"Executable k3s binary not found\"")
	}
	return onDisk, nil
}
