package sim

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/cluster-api/util/certs"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// k3sToken is a join token in one of the forms k3s accepts.
type k3sToken struct {
	// caHash pins the server CA: the hex SHA-256 of the CA bundle; empty for a bare
	// passphrase or "K10::user:pass".
	caHash     string
	user       string
	passphrase string
}

// parseToken reads a token as k3s does: "K10<hash>::<user>:<passphrase>", or a bare
// passphrase.
func parseToken(s string) (k3sToken, error) {
	rest, secure := strings.CutPrefix(s, "K10")
	if !secure {
		if s == "" {
			return k3sToken{}, errors.New("empty token")
		}
		return k3sToken{passphrase: s}, nil
	}
	hash, creds, ok := strings.Cut(rest, "::")
	if !ok {
		return k3sToken{}, errors.New("token starts with K10 but has no '::'")
	}
	user, pass, ok := strings.Cut(creds, ":")
	if !ok || user == "" || pass == "" {
		return k3sToken{}, errors.New("token has no <user>:<passphrase> after '::'")
	}
	return k3sToken{caHash: hash, user: user, passphrase: pass}, nil
}

// caHash is what a joining k3s compares a secure token's hash with: the hex SHA-256
// of the CA bundle the cluster serves (a single certificate here: the file's bytes).
func caHash(caPEM []byte) string {
	sum := sha256.Sum256(caPEM)
	return hex.EncodeToString(sum[:])
}

// checkStatic checks what needs no cluster: the OS setup, the options suit the role, a server has
// the cluster's CAs, and the token is well formed for the role.
func (b *bootData) checkStatic() error {
	if err := b.checkOSSetup(); err != nil {
		return err
	}
	role := b.install.role
	if err := b.readAsK3s(); err != nil {
		return err
	}
	if role == roleServer {
		if err := b.checkCAFiles(); err != nil {
			return err
		}
		if err := b.checkEtcd(); err != nil {
			return err
		}
	}
	tok, err := b.token("token")
	if err != nil {
		return err
	}
	if tok.user != "" && tok.user != "server" && tok.user != "node" {
		return fmt.Errorf("token user %q is neither server nor node", tok.user)
	}
	if role == roleServer && tok.user == "node" {
		return errors.New("a server's token is an agent token (::node:): servers cannot join with it")
	}
	if b.datastore() != "" {
		return b.checkDatastore()
	}
	if b.clusterInit() && b.str("server") != "" {
		return errors.New("cluster-init together with server: the server would join, not initialize")
	}
	if !b.clusterInit() && b.str("server") == "" {
		return errors.New("no server URL and no cluster-init: k3s would start a new cluster of its own")
	}
	return nil
}

// checkDatastore checks a server of a datastore cluster: every server meets the others
// in the datastore, so none initializes an etcd (cluster-init) or joins another
// server (server), and the datastore's TLS files it names are in the data.
func (b *bootData) checkDatastore() error {
	if b.clusterInit() {
		return errors.New("cluster-init together with datastore-endpoint: embedded etcd and an external datastore exclude each other")
	}
	if b.str("server") != "" {
		return errors.New("server together with datastore-endpoint: a datastore server meets the others in the datastore, not through a server URL")
	}
	for _, key := range []string{"datastore-cafile", "datastore-certfile", "datastore-keyfile"} {
		if path := b.str(key); path != "" && b.files[path] == nil {
			return fmt.Errorf("%s %s is not in the bootstrap data", key, path)
		}
	}
	return nil
}

// datastore is a server's datastore-endpoint, "" for embedded etcd.
func (b *bootData) datastore() string {
	return b.str("datastore-endpoint")
}

// checkCAFiles checks that a server is given the cluster's CAs, so that every server
// signs with the same ones.
func (b *bootData) checkCAFiles() error {
	for _, pair := range [][2]string{{serverCACertPath, serverCAKeyPath}, {clientCACertPath, clientCAKeyPath}} {
		cert, key := b.files[pair[0]], b.files[pair[1]]
		if cert == nil || key == nil {
			return fmt.Errorf("a server's bootstrap data lacks %s or %s", pair[0], pair[1])
		}
		if _, err := certs.DecodeCertPEM(cert); err != nil {
			return fmt.Errorf("%s: %w", pair[0], err)
		}
		if _, err := certs.DecodePrivateKeyPEM(key); err != nil {
			return fmt.Errorf("%s: %w", pair[1], err)
		}
	}
	return nil
}

func (b *bootData) clusterInit() bool {
	v, _ := b.k3sConfig["cluster-init"].(bool)
	return v
}

// token parses the named option as a k3s token.
func (b *bootData) token(key string) (k3sToken, error) {
	s := b.str(key)
	if s == "" {
		return k3sToken{}, fmt.Errorf("%s has no %s", k3sConfigPath, key)
	}
	t, err := parseToken(s)
	if err != nil {
		return k3sToken{}, fmt.Errorf("%s: %w", key, err)
	}
	return t, nil
}

// secrets are what an initialized cluster's servers hold and joiners must match.
type secrets struct {
	caPEM      []byte
	serverPass string
	agentPass  string
	// datastore is the datastore-endpoint of a datastore cluster, "" with etcd.
	datastore string
	// embeddedCCM: the servers run k3s's embedded cloud controller (nodecloud.go).
	embeddedCCM bool
	// flannelBackend is the first server's flannel-backend, which servers hand their
	// agents (flannel.go).
	flannelBackend string
	// critical are the first server's critical settings (critical.go); nil on a
	// datastore cluster, whose servers k3s does not compare.
	critical k3smodel.Critical
}

// initSecrets are the secrets a cluster-init server sets up from its data.
func (b *bootData) initSecrets() (secrets, error) {
	s := secrets{caPEM: b.files[serverCACertPath], datastore: b.datastore(), embeddedCCM: !b.disablesCCM(), flannelBackend: b.ownFlannelBackend()}
	tok, err := b.token("token")
	if err != nil {
		return s, err
	}
	if err := s.checkPin(tok); err != nil {
		return s, err
	}
	s.serverPass, s.agentPass = tok.passphrase, tok.passphrase
	if b.str("agent-token") != "" {
		agent, err := b.token("agent-token")
		if err != nil {
			return s, err
		}
		if err := s.checkPin(agent); err != nil {
			return s, fmt.Errorf("agent-token: %w", err)
		}
		s.agentPass = agent.passphrase
	}
	if s.datastore == "" {
		if s.critical, err = b.critical(); err != nil {
			return s, err
		}
	}
	return s, nil
}

// checkPin fails when a secure token pins another CA than the cluster's.
func (s secrets) checkPin(t k3sToken) error {
	if t.caHash != "" && t.caHash != caHash(s.caPEM) {
		return errors.New("token's CA hash does not match the cluster's server CA: k3s would refuse the CA it is served")
	}
	return nil
}

// checkJoin checks a joining machine's data against the cluster it joins: the server
// URL is the endpoint (for a server of a datastore cluster: the datastore is the
// cluster's), the token is the cluster's (the agent token for agents, when
// the cluster has one), an agent carries no server secret, and a server of an
// embedded-etcd cluster shares the cluster's critical settings (critical.go).
func (b *bootData) checkJoin(s secrets, reaches func(string) bool, raw []byte) error {
	if b.install.role == roleServer && s.datastore != "" {
		// The endpoint holds a password: the message must not quote it.
		if b.datastore() != s.datastore {
			return errors.New("datastore-endpoint is not the cluster's: this server would start another cluster, or none")
		}
	} else if got := b.str("server"); !reaches(got) {
		return fmt.Errorf("server URL %q is neither the cluster's endpoint nor a running server's own address: k3s cannot reach the cluster there", got)
	}
	tok, err := b.token("token")
	if err != nil {
		return err
	}
	if err := s.checkPin(tok); err != nil {
		return err
	}
	want := s.serverPass
	if b.install.role == roleAgent {
		want = s.agentPass
	}
	if tok.passphrase != want {
		return errors.New("token does not match the cluster's: k3s would refuse the join")
	}
	if b.install.role == roleAgent && s.agentPass != s.serverPass && b.holds(raw, []byte(s.serverPass)) {
		return errors.New("an agent's bootstrap data holds the server token")
	}
	if b.install.role == roleServer && !bytes.Equal(b.files[serverCACertPath], s.caPEM) {
		return errors.New("a joining server is given another server CA than the cluster's")
	}
	return b.checkCritical(s)
}

// holds says whether secret appears anywhere in the data: as written, in a file once
// decoded (base64, gzip), or in a command.
func (b *bootData) holds(raw, secret []byte) bool {
	if bytes.Contains(raw, secret) {
		return true
	}
	for _, content := range b.files {
		if bytes.Contains(content, secret) {
			return true
		}
	}
	for _, c := range b.commands {
		if strings.Contains(c, string(secret)) {
			return true
		}
	}
	return false
}
