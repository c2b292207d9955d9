package bootstrap

import (
	"context"
	"fmt"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/token"
)

// Role is what a machine runs: a k3s server or a k3s agent.
type Role string

const (
	// Server runs the k3s control plane (and embedded etcd).
	Server Role = "server"
	// Agent runs workloads only.
	Agent Role = "agent"
)

// TokenOptions are the join-token options of k3s's config file for one machine.
// The JSON names are k3s's own option names.
type TokenOptions struct {
	// Token is k3s's "token": the server token on servers, the agent token on agents.
	Token string `json:"token"`
	// AgentToken is k3s's "agent-token", set on servers of clusters that have one, so
	// that every server accepts agents with it.
	AgentToken string `json:"agent-token,omitempty"`
}

// String keeps the tokens out of logs should the options ever be printed.
func (TokenOptions) String() string { return "k3s token options(redacted)" }

// JoinTokenOptions reads the cluster's token and returns what a machine of the given
// role puts in its k3s config, in the secure form that pins serverCAPEM (the exact
// bytes written to the servers as server-ca.crt). found is false, with no error, while
// the control plane has not created the token yet: the caller waits for the Secret.
func JoinTokenOptions(ctx context.Context, r client.Reader, cluster *clusterv1.Cluster, role Role, serverCAPEM []byte) (opts TokenOptions, found bool, err error) {
	tok, found, err := token.Lookup(ctx, r, cluster)
	if err != nil || !found {
		return TokenOptions{}, false, err
	}
	switch role {
	case Server:
		if opts.Token, err = tok.ServerJoinToken(serverCAPEM); err != nil {
			return TokenOptions{}, false, err
		}
		if tok.HasAgentToken() {
			if opts.AgentToken, err = tok.AgentJoinToken(serverCAPEM); err != nil {
				return TokenOptions{}, false, err
			}
		}
	case Agent:
		// Agents never see the server passphrase when the cluster has an agent token.
		if opts.Token, err = tok.AgentJoinToken(serverCAPEM); err != nil {
			return TokenOptions{}, false, err
		}
	default:
		return TokenOptions{}, false, fmt.Errorf("unknown machine role %q", role)
	}
	return opts, true, nil
}
