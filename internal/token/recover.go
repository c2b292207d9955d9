package token

import (
	"context"
	"errors"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/initguard"
)

// errServersDisagree: two servers were given different tokens. Picking one would
// break the others, so nothing is recovered.
var errServersDisagree = errors.New("the servers' bootstrap data hold different join tokens")

// recoverFromServers reads the token back from the bootstrap data Secrets of the
// control plane's servers: those their Machines name and those the control
// plane's KThreesConfigs wrote, which exist before CAPI names them on the
// Machines. found is false when no server has one.
func recoverFromServers(ctx context.Context, r client.Reader, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) (tok Token, found bool, err error) {
	secrets, err := initguard.ServerDataSecrets(ctx, r, cluster, kcp)
	if err != nil {
		return Token{}, false, err
	}
	for _, d := range secrets {
		s, ok, err := d.Read(ctx, r)
		if err != nil {
			return Token{}, false, err
		}
		if !ok {
			continue
		}
		got, ok, err := tokenFromBootstrapData(s.Data["value"], string(s.Data["format"]))
		if err != nil || !ok {
			// One unreadable Secret must not hide a readable one on another server.
			continue
		}
		if found && got != tok {
			return Token{}, false, errServersDisagree
		}
		tok, found = got, true
	}
	return tok, found, nil
}
