package sim

import "github.com/capk3s/capk3s/internal/k3s"

// knownOption says whether role's k3s takes key. The list is internal/k3s's, the
// one the webhooks check extraConfig against, so the simulator refuses exactly what
// admission would have let through by mistake.
func knownOption(role, key string) bool {
	return k3s.KnownOption(role, key)
}
