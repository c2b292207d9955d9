package k3smodel

import (
	"strings"
	"testing"
)

// TestCheckFlannelKernel: only a k3s that runs flannel with wireguard-native needs
// WireGuard in the kernel; it exits without it.
func TestCheckFlannelKernel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		role         string
		disableAgent bool
		backend      string
		wireGuard    bool
		exits        bool
	}{
		{role: RoleServer, backend: BackendWireguardNative, exits: true},
		{role: RoleAgent, backend: BackendWireguardNative, exits: true},
		{role: RoleServer, backend: BackendWireguardNative, wireGuard: true},
		{role: RoleAgent, backend: BackendWireguardNative, wireGuard: true},
		// A server without its agent runs no flannel; "none" runs none.
		{role: RoleServer, disableAgent: true, backend: BackendWireguardNative},
		{role: RoleServer, backend: BackendNone},
		{role: RoleAgent, backend: BackendNone},
		// Other backends need no WireGuard.
		{role: RoleServer, backend: BackendVXLAN},
		{role: RoleAgent, backend: "host-gw"},
	}
	for _, tc := range tests {
		err := CheckFlannelKernel(tc.role, tc.disableAgent, tc.backend, tc.wireGuard)
		if !tc.exits {
			if err != nil {
				t.Errorf("%+v: %v, want k3s to run", tc, err)
			}
			continue
		}
		if !IsExit(err) || !strings.HasPrefix(err.Error(), "k3s "+tc.role+" exited: "+FlannelExitMessage) || !strings.Contains(err.Error(), "Restart=always") {
			t.Errorf("%+v: %v, want k3s to exit with flannel's error, restarted", tc, err)
		}
	}
}
