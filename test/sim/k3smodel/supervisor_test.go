package k3smodel

import "testing"

func TestSupervisorPort(t *testing.T) {
	for _, tc := range []struct {
		values map[string][]string
		want   int
	}{
		{nil, 6443},
		{map[string][]string{"https-listen-port": {"7443"}}, 7443},
		{map[string][]string{"https-listen-port": {"7443"}, "supervisor-port": {"9345"}}, 9345},
	} {
		if got := SupervisorPort(Config{Values: tc.values}); got != tc.want {
			t.Errorf("SupervisorPort(%v) = %d, want %d", tc.values, got, tc.want)
		}
	}
}
