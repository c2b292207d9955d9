package k3smodel

import "testing"

func TestNodeProviderID(t *testing.T) {
	const infra = "sim://ns/m-1"
	for _, tc := range []struct {
		name string
		c    NodeCloud
		want string
	}{
		{"embedded CCM names the Node", NodeCloud{EmbeddedCCM: true, ExternalCCMProviderID: infra}, "k3s://node-a"},
		{"embedded CCM keeps a kubelet provider-id", NodeCloud{EmbeddedCCM: true, KubeletArgs: []string{"provider-id=" + infra}}, infra},
		{"external CCM with cloud-provider=external", NodeCloud{KubeletArgs: []string{"cloud-provider=external"}, ExternalCCMProviderID: infra}, infra},
		{"last cloud-provider wins", NodeCloud{KubeletArgs: []string{"cloud-provider=external", "--cloud-provider="}, ExternalCCMProviderID: infra}, ""},
		{"no cloud controller at all", NodeCloud{ExternalCCMProviderID: infra}, ""},
		{"external cloud-provider but no CCM runs", NodeCloud{KubeletArgs: []string{"cloud-provider=external"}}, ""},
		{"kubelet provider-id without any CCM", NodeCloud{KubeletArgs: []string{"--provider-id=aws:///x"}}, "aws:///x"},
	} {
		if got := tc.c.ProviderID("node-a"); got != tc.want {
			t.Errorf("%s: ProviderID = %q, want %q", tc.name, got, tc.want)
		}
	}
}
