package token

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

const (
	securePrefix = "K10"
	serverUser   = "server"
	agentUser    = "node"
)

// CAHash is the hash that k3s compares with the CA bundle it downloads from /cacerts:
// the hex SHA-256 of the exact PEM bytes of the server CA as written to the servers.
func CAHash(serverCAPEM []byte) string {
	sum := sha256.Sum256(serverCAPEM)
	return hex.EncodeToString(sum[:])
}

// ServerJoinToken is the value of k3s's "token" option on servers: it pins the CA.
func (t Token) ServerJoinToken(serverCAPEM []byte) (string, error) {
	return secureForm(serverCAPEM, serverUser, t.Server)
}

// AgentJoinToken is what servers get as "agent-token" and agents as "token". Without
// an agent passphrase, agents use the server token, as k3s allows.
func (t Token) AgentJoinToken(serverCAPEM []byte) (string, error) {
	if t.Agent == "" {
		return t.ServerJoinToken(serverCAPEM)
	}
	return secureForm(serverCAPEM, agentUser, t.Agent)
}

func secureForm(serverCAPEM []byte, user, passphrase string) (string, error) {
	if len(serverCAPEM) == 0 {
		return "", errors.New("no server CA certificate to pin the join token to")
	}
	if passphrase == "" {
		return "", errors.New("empty join token passphrase")
	}
	return securePrefix + CAHash(serverCAPEM) + "::" + user + ":" + passphrase, nil
}

// Passphrase extracts the passphrase from a k3s token in any form k3s accepts:
// "K10<hash>::<user>:<passphrase>", "K10::<user>:<passphrase>", or a bare passphrase.
func Passphrase(k3sToken string) string {
	rest, ok := strings.CutPrefix(k3sToken, securePrefix)
	if !ok {
		return k3sToken
	}
	if _, creds, found := strings.Cut(rest, "::"); found {
		rest = creds
	}
	if _, pass, found := strings.Cut(rest, ":"); found {
		return pass
	}
	return rest
}
