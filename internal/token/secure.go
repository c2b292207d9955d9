package token

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"strings"

	certutil "k8s.io/client-go/util/cert"
)

const (
	securePrefix = "K10"
	serverUser   = "server"
	agentUser    = "node"
)

// CAHash is the hash that k3s compares with the CA bundle it downloads from /cacerts,
// computed as k3s does: for a single certificate (what capk3s creates) the hex SHA-256
// of the exact PEM bytes; for a bundle, that of the DER encoding of the root that the
// bundle's first certificate chains to. k3s has no helper importable here, so this
// mirrors its rule; the tests pin both cases.
func CAHash(serverCAPEM []byte) string {
	b := serverCAPEM
	if certs, err := certutil.ParseCertsPEM(serverCAPEM); err == nil && len(certs) > 1 {
		if root := bundleRoot(certs); root != nil {
			b = root.Raw
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// bundleRoot is the root of the first certificate's chain, the other certificates of
// the bundle being the candidate roots (self-issued) and intermediates.
func bundleRoot(certs []*x509.Certificate) *x509.Certificate {
	roots, intermediates := x509.NewCertPool(), x509.NewCertPool()
	for _, c := range certs[1:] {
		if len(c.AuthorityKeyId) == 0 || bytes.Equal(c.AuthorityKeyId, c.SubjectKeyId) {
			roots.AddCert(c)
		} else {
			intermediates.AddCert(c)
		}
	}
	chains, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates})
	if err != nil || len(chains) == 0 {
		return nil
	}
	chain := chains[0]
	return chain[len(chain)-1]
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
