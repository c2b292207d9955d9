package sim

import (
	"fmt"

	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// The simulated infrastructure ships a cloud controller manager, as Cluster API
// infrastructure providers do: it initializes the Nodes whose kubelet runs with
// cloud-provider=external, giving each its machine's providerID. Whether that
// controller, k3s's embedded one, or nobody sets a Node's providerID is k3s's rule
// (k3smodel.NodeCloud); the SimMachine reports its own ID either way, and Cluster
// API matches the two only when they are equal.

// disablesCCM says whether the data's k3s config sets disable-cloud-controller.
func (b *bootData) disablesCCM() bool {
	switch v := b.k3sConfig["disable-cloud-controller"].(type) {
	case bool:
		return v
	case string:
		return v == "true"
	}
	return false
}

// nodeProviderID is the providerID the machine's Node gets. A server runs the
// embedded cloud controller unless its own config disables it; an agent follows the
// cluster's servers (s, from the first server's data).
func nodeProviderID(b *bootData, s secrets, nodeName, infraID string) (string, error) {
	args, err := stringList(b.k3sConfig, "kubelet-arg")
	if err != nil {
		return "", err
	}
	embedded := s.embeddedCCM
	if b.install.role == roleServer {
		embedded = !b.disablesCCM()
	}
	cloud := k3smodel.NodeCloud{EmbeddedCCM: embedded, KubeletArgs: args, ExternalCCMProviderID: infraID}
	return cloud.ProviderID(nodeName), nil
}

// installedRelease is the k3s release that runs on the machine: the one the install
// asks for, or the image's own when the install skips the download.
func installedRelease(b *bootData, sm *simv1.SimMachine) (string, error) {
	onDisk := sm.Annotations[simv1.ImageK3sReleaseAnnotation]
	if onDisk == "" {
		onDisk = b.install.version
	}
	r, err := k3smodel.InstalledRelease(b.install.version, b.install.skipDownload, onDisk)
	if err != nil {
		return "", err
	}
	if _, err := k3smodel.ParseRelease(r); err != nil {
		return "", fmt.Errorf("%s: %w", simv1.ImageK3sReleaseAnnotation, err)
	}
	return r, nil
}
