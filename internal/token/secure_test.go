package token_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/capk3s/capk3s/internal/token"
)

// selfSignedCAPEM makes a real self-signed CA certificate, PEM encoded the way it is
// written to the servers as server-ca.crt.
func selfSignedCAPEM(t *testing.T) []byte {
	t.Helper()
	_, pemBytes, _ := issueCA(t, "k3s-server-ca", nil, nil)
	return pemBytes
}

// issueCA makes a CA certificate signed by parent (self-signed when parent is nil)
// and returns it parsed and PEM encoded, with its key.
func issueCA(t *testing.T, commonName string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, []byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key
}

// For a bundle of several certificates k3s hashes the DER of the root that the first
// certificate chains to, so that the cluster CA can be renewed under the same root.
func TestCAHashOfABundleIsTheRootsDER(t *testing.T) {
	root, rootPEM, rootKey := issueCA(t, "root", nil, nil)
	_, interPEM, _ := issueCA(t, "k3s-server-ca", root, rootKey)
	_, renewedPEM, _ := issueCA(t, "k3s-server-ca", root, rootKey)
	bundle := append(append([]byte{}, interPEM...), rootPEM...)

	if got, want := token.CAHash(bundle), sha256Hex(root.Raw); got != want {
		t.Errorf("CAHash(intermediate+root) = %s, want SHA-256 of the root's DER %s", got, want)
	}
	if token.CAHash(bundle) == sha256Hex(bundle) {
		t.Error("a bundle was hashed as literal bytes")
	}
	renewed := append(append([]byte{}, renewedPEM...), rootPEM...)
	if token.CAHash(renewed) != token.CAHash(bundle) {
		t.Error("a renewed intermediate under the same root changed the hash")
	}
	tok := token.Token{Server: "p"}
	got, err := tok.ServerJoinToken(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if want := "K10" + sha256Hex(root.Raw) + "::server:p"; got != want {
		t.Errorf("ServerJoinToken(bundle) = %q, want %q", got, want)
	}

	// A single certificate, even one signed by another CA, is hashed as its literal
	// PEM bytes.
	if got, want := token.CAHash(interPEM), sha256Hex(interPEM); got != want {
		t.Errorf("CAHash(one intermediate) = %s, want the hash of its PEM bytes %s", got, want)
	}
	// A bundle whose first certificate does not chain to the others falls back to the
	// literal bytes, as k3s does.
	_, strangerPEM, _ := issueCA(t, "stranger", nil, nil)
	unrelated := append(append([]byte{}, strangerPEM...), rootPEM...)
	if got, want := token.CAHash(unrelated), sha256Hex(unrelated); got != want {
		t.Errorf("CAHash(unrelated bundle) = %s, want the hash of its bytes %s", got, want)
	}
}

// sha256Hex is computed here independently of the package under test.
func sha256Hex(b []byte) string {
	h := sha256.New()
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func TestServerJoinTokenPinsTheCAPEMBytes(t *testing.T) {
	ca := selfSignedCAPEM(t)
	tok := token.Token{Server: "server-pass", Agent: "agent-pass"}

	got, err := tok.ServerJoinToken(ca)
	if err != nil {
		t.Fatal(err)
	}
	want := "K10" + sha256Hex(ca) + "::server:server-pass"
	if got != want {
		t.Errorf("ServerJoinToken = %q, want %q", got, want)
	}
	if h := token.CAHash(ca); h != sha256Hex(ca) || len(h) != 64 {
		t.Errorf("CAHash = %q, want the 64-hex SHA-256 of the PEM bytes %q", h, sha256Hex(ca))
	}
	if p := token.Passphrase(got); p != tok.Server {
		t.Errorf("Passphrase(ServerJoinToken) = %q, want %q", p, tok.Server)
	}

	// The hash is of the exact bytes: another CA, or the same CA without its final
	// newline, pins something else.
	other, err := tok.ServerJoinToken(selfSignedCAPEM(t))
	if err != nil {
		t.Fatal(err)
	}
	if other == got {
		t.Error("two different CAs gave the same server join token")
	}
	trimmed, err := tok.ServerJoinToken([]byte(strings.TrimRight(string(ca), "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if trimmed == got {
		t.Error("the hash ignores a byte difference in the PEM; k3s compares exact bytes")
	}
}

func TestAgentJoinToken(t *testing.T) {
	ca := selfSignedCAPEM(t)
	hash := sha256Hex(ca)

	withAgent := token.Token{Server: "server-pass", Agent: "agent-pass"}
	got, err := withAgent.AgentJoinToken(ca)
	if err != nil {
		t.Fatal(err)
	}
	if want := "K10" + hash + "::node:agent-pass"; got != want {
		t.Errorf("AgentJoinToken = %q, want %q", got, want)
	}
	if strings.Contains(got, "server-pass") {
		t.Errorf("the agent join token %q carries the server passphrase", got)
	}
	if p := token.Passphrase(got); p != "agent-pass" {
		t.Errorf("Passphrase(AgentJoinToken) = %q, want agent-pass", p)
	}

	serverOnly := token.Token{Server: "server-pass"}
	if serverOnly.HasAgentToken() {
		t.Error("HasAgentToken() = true for a token without agent passphrase")
	}
	got, err = serverOnly.AgentJoinToken(ca)
	if err != nil {
		t.Fatal(err)
	}
	if want := "K10" + hash + "::server:server-pass"; got != want {
		t.Errorf("AgentJoinToken without agent passphrase = %q, want the server form %q", got, want)
	}
}

func TestJoinTokenErrors(t *testing.T) {
	ca := selfSignedCAPEM(t)
	tok := token.Token{Server: "server-pass", Agent: "agent-pass"}
	for name, call := range map[string]func() (string, error){
		"server, nil CA":       func() (string, error) { return tok.ServerJoinToken(nil) },
		"server, empty CA":     func() (string, error) { return tok.ServerJoinToken([]byte{}) },
		"agent, nil CA":        func() (string, error) { return tok.AgentJoinToken(nil) },
		"server-only agent":    func() (string, error) { return token.Token{Server: "s"}.AgentJoinToken(nil) },
		"empty server passwd":  func() (string, error) { return token.Token{}.ServerJoinToken(ca) },
		"empty both, agent ok": func() (string, error) { return token.Token{}.AgentJoinToken(ca) },
	} {
		t.Run(name, func(t *testing.T) {
			got, err := call()
			if err == nil {
				t.Fatalf("got %q and no error", got)
			}
			if got != "" {
				t.Errorf("got %q along with error %v; want an empty token", got, err)
			}
		})
	}
}

func TestPassphrase(t *testing.T) {
	hash := sha256Hex([]byte("ca"))
	tests := []struct {
		in, want string
	}{
		{in: "bare-passphrase", want: "bare-passphrase"},
		{in: "K10" + hash + "::server:p", want: "p"},
		{in: "K10" + hash + "::node:agentp", want: "agentp"},
		{in: "K10::node:p", want: "p"},
		{in: "K10::server:p", want: "p"},
		{in: "K10" + hash + "::server:pa:ss:word", want: "pa:ss:word"},
		{in: "K10::server:a:b", want: "a:b"},
		// k3s's own short form without the "::" separator: <user>:<passphrase>.
		{in: "K10server:p", want: "p"},
		// Without the K10 prefix the whole string is the passphrase, colons included.
		{in: "server:p", want: "server:p"},
		{in: "", want: ""},
	}
	for _, tc := range tests {
		if got := token.Passphrase(tc.in); got != tc.want {
			t.Errorf("Passphrase(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
