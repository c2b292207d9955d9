package manager

import (
	"testing"

	"k8s.io/client-go/rest"
)

func TestRestConfig(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantQPS   float32
		wantBurst int
	}{
		{name: "defaults", args: nil, wantQPS: 100, wantBurst: 200},
		{name: "flags", args: []string{"--kube-api-qps=42.5", "--kube-api-burst=7"}, wantQPS: 42.5, wantBurst: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := &rest.Config{Host: "https://example.invalid:6443", QPS: 5, Burst: 10}
			got := RestConfig(base, parse(t, tt.args...))

			if got.QPS != tt.wantQPS || got.Burst != tt.wantBurst {
				t.Errorf("QPS/Burst = %v/%d, want %v/%d", got.QPS, got.Burst, tt.wantQPS, tt.wantBurst)
			}
			if got.Host != "https://example.invalid:6443" {
				t.Errorf("Host = %q, want it kept from base", got.Host)
			}
			if base.QPS != 5 || base.Burst != 10 {
				t.Errorf("base was modified: QPS/Burst = %v/%d", base.QPS, base.Burst)
			}
		})
	}
}
