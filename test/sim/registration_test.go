package sim

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A node may join through the endpoint or a running server's own supervisor URL;
// once that server is gone, its URL leads nowhere.
func TestJoinThroughARunningServer(t *testing.T) {
	c := &workloadCluster{port: 30443, onChange: func(client.ObjectKey) {}}
	c.serverUp("s0", "10.1.0.5", 6443)
	c.serverUp("s1", "10.1.0.6", 7443)
	for url, want := range map[string]bool{
		"https://127.0.0.1:30443": true,
		"https://10.1.0.5:6443":   true,
		"https://10.1.0.6:7443":   true,
		"https://10.1.0.6:6443":   false, // s1 listens on 7443
		"https://10.1.0.7:6443":   false, // no server there
	} {
		if got := c.reaches(url); got != want {
			t.Errorf("reaches(%s) = %v, want %v", url, got, want)
		}
	}
	if err := c.serverGone("s0"); err != nil {
		t.Fatal(err)
	}
	if c.reaches("https://10.1.0.5:6443") {
		t.Error("a gone server's URL still reaches the cluster")
	}
}
