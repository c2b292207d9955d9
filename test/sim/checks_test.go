package sim

import (
	"strings"
	"testing"

	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/token"
)

func TestParseToken(t *testing.T) {
	t.Parallel()
	const hash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		in      string
		want    k3sToken
		wantErr string
	}{
		{in: "s3cr3t", want: k3sToken{passphrase: "s3cr3t"}},
		{in: "with:colons::inside", want: k3sToken{passphrase: "with:colons::inside"}},
		{in: "K1", want: k3sToken{passphrase: "K1"}},
		{in: "k10" + hash + "::server:pass", want: k3sToken{passphrase: "k10" + hash + "::server:pass"}},
		{in: "K10" + hash + "::server:pass", want: k3sToken{caHash: hash, user: "server", passphrase: "pass"}},
		{in: "K10" + hash + "::node:pass", want: k3sToken{caHash: hash, user: "node", passphrase: "pass"}},
		{in: "K10::node:pass", want: k3sToken{user: "node", passphrase: "pass"}},
		{in: "K10::server:pass", want: k3sToken{user: "server", passphrase: "pass"}},
		{in: "K10" + hash + "::server:pa:ss", want: k3sToken{caHash: hash, user: "server", passphrase: "pa:ss"}},
		{in: "K10" + hash + "::server:p::q", want: k3sToken{caHash: hash, user: "server", passphrase: "p::q"}},
		{in: "", wantErr: "empty token"},
		{in: "K10", wantErr: "has no '::'"},
		{in: "K10" + hash, wantErr: "has no '::'"},
		{in: "K10" + hash + ":server:pass", wantErr: "has no '::'"},
		{in: "K10" + hash + "::", wantErr: "no <user>:<passphrase>"},
		{in: "K10" + hash + "::pass", wantErr: "no <user>:<passphrase>"},
		{in: "K10" + hash + ":::pass", wantErr: "no <user>:<passphrase>"},
		{in: "K10" + hash + "::server:", wantErr: "no <user>:<passphrase>"},
		{in: "K10::node", wantErr: "no <user>:<passphrase>"},
	}
	for _, tc := range tests {
		got, err := parseToken(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseToken(%q) = %+v, %v, want an error containing %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseToken(%q) = %+v, %v, want %+v", tc.in, got, err, tc.want)
		}
	}
}

// TestCAHashAgreesWithTheProduct pins the simulator's CA hash to the one capk3s puts
// in join tokens, for the single-certificate PEMs capk3s creates.
func TestCAHashAgreesWithTheProduct(t *testing.T) {
	t.Parallel()
	for name, ca := range map[string]clusterCAs{"cluster": mustCAs(t, theCAs), "other": mustCAs(t, otherCAs)} {
		got, want := caHash(ca.serverCA), token.CAHash(ca.serverCA)
		if got != want {
			t.Errorf("%s CA: caHash = %s, token.CAHash = %s", name, got, want)
		}
		if len(got) != 64 || strings.Trim(got, "0123456789abcdef") != "" {
			t.Errorf("%s CA: caHash = %q, want 64 lower-case hex digits", name, got)
		}
		tok, err := token.Token{Server: "pass"}.ServerJoinToken(ca.serverCA)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := parseToken(tok)
		if err != nil {
			t.Fatalf("parseToken(%q): %v", tok, err)
		}
		if parsed.caHash != got || parsed.user != "server" || parsed.passphrase != "pass" {
			t.Errorf("%s CA: parseToken(ServerJoinToken) = %+v, want hash %s, user server, passphrase pass", name, parsed, got)
		}
	}
	if a, b := caHash(mustCAs(t, theCAs).serverCA), caHash(mustCAs(t, otherCAs).serverCA); a == b {
		t.Errorf("two CAs have the same hash %s", a)
	}
	// The hash is over the exact bytes: a trailing newline more is another CA bundle.
	pem := mustCAs(t, theCAs).serverCA
	if caHash(pem) == caHash(append(append([]byte{}, pem...), '\n')) {
		t.Error("caHash ignores a byte more")
	}
	// The SHA-256 of nothing, as a known answer.
	if got, want := caHash(nil), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"; got != want {
		t.Errorf("caHash(nil) = %s, want %s", got, want)
	}
}

// joinTokens are a cluster's tokens in the form internal/bootstrap gives them.
type joinTokens struct {
	server string
	// agent is "" when the cluster has no agent token; agents then get server.
	agent string
}

func mustJoinTokens(t testing.TB, tok token.Token, caPEM []byte) joinTokens {
	t.Helper()
	server, err := tok.ServerJoinToken(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	j := joinTokens{server: server}
	if tok.Agent != "" {
		if j.agent, err = tok.AgentJoinToken(caPEM); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

// forAgents is the token an agent gets.
func (j joinTokens) forAgents() string {
	if j.agent == "" {
		return j.server
	}
	return j.agent
}

// machineData renders the bootstrap data of a machine of role, as internal/bootstrap
// would, with the given CAs (servers) and tokens, and reads it with the simulator.
func machineData(t testing.TB, role cloudinit.Role, ca clusterCAs, j joinTokens, files ...cloudinit.File) (*bootData, []byte) {
	t.Helper()
	in := cloudinit.Input{Role: role, Version: testVersion, Token: j.server, AgentToken: j.agent, Files: files}
	switch role {
	case cloudinit.ServerInit:
		in.Certificates, in.TLSSANs = ca.files, []string{"cp.example.com"}
	case cloudinit.ServerJoin:
		in.Certificates, in.TLSSANs, in.ServerURL = ca.files, []string{"cp.example.com"}, testEndpoint
	case cloudinit.Agent:
		in.ServerURL, in.Token, in.AgentToken = testEndpoint, j.forAgents(), ""
	}
	return parseRendered(t, mustRender(t, in))
}

func TestCheckStatic(t *testing.T) {
	t.Parallel()
	ca := mustCAs(t, theCAs)
	j := mustJoinTokens(t, token.Token{Server: "s3rver", Agent: "ag3nt"}, ca.serverCA)
	tests := []struct {
		name    string
		role    cloudinit.Role
		edit    func(b *bootData)
		wantErr string // "" means checkStatic passes
	}{
		{name: "rendered server-init", role: cloudinit.ServerInit},
		{name: "rendered server-join", role: cloudinit.ServerJoin},
		{name: "rendered agent", role: cloudinit.Agent},
		{
			name: "cluster-init on an agent", role: cloudinit.Agent,
			edit:    func(b *bootData) { b.k3sConfig["cluster-init"] = true },
			wantErr: "k3s agent exited: flag provided but not defined: -cluster-init",
		},
		{
			name: "tls-san on an agent", role: cloudinit.Agent,
			edit:    func(b *bootData) { b.k3sConfig["tls-san"] = []any{"cp.example.com"} },
			wantErr: "k3s agent exited: flag provided but not defined: -tls-san",
		},
		{
			name: "tls-san+ on an agent", role: cloudinit.Agent,
			edit:    func(b *bootData) { b.k3sConfig["tls-san+"] = []any{"cp.example.com"} },
			wantErr: "k3s agent exited: flag provided but not defined: -tls-san",
		},
		{
			name: "several server options on an agent: the first ends k3s", role: cloudinit.Agent,
			edit: func(b *bootData) {
				b.k3sConfig["tls-san"] = []any{"x"}
				b.k3sConfig["agent-token"] = j.agent
				b.k3sConfig["disable"] = []any{"traefik"}
			},
			wantErr: "k3s agent exited: flag provided but not defined: -agent-token",
		},
		{
			// k3s server skips a key it does not know (see TestServerDropsUnknownKeys).
			name: "typo on a server", role: cloudinit.ServerJoin,
			edit: func(b *bootData) { b.k3sConfig["tls-sans"] = []any{"x"} },
		},
		{
			name: "underscore instead of dash on a server", role: cloudinit.ServerInit,
			edit: func(b *bootData) { b.k3sConfig["node_name"] = "x" },
		},
		{
			name: "key+ on a server", role: cloudinit.ServerInit,
			edit: func(b *bootData) {
				b.k3sConfig["node-label+"] = []any{"a=b"}
				b.k3sConfig["tls-san+"] = []any{"x"}
			},
		},
		{
			name: "key+ on an agent", role: cloudinit.Agent,
			edit: func(b *bootData) { b.k3sConfig["kubelet-arg+"] = []any{"v=2"} },
		},
		{
			name: "server lacking the server CA key", role: cloudinit.ServerJoin,
			edit:    func(b *bootData) { delete(b.files, serverCAKeyPath) },
			wantErr: "lacks " + serverCACertPath + " or " + serverCAKeyPath,
		},
		{
			name: "server lacking the server CA certificate", role: cloudinit.ServerInit,
			edit:    func(b *bootData) { delete(b.files, serverCACertPath) },
			wantErr: "lacks " + serverCACertPath + " or " + serverCAKeyPath,
		},
		{
			name: "server lacking the client CA certificate", role: cloudinit.ServerInit,
			edit:    func(b *bootData) { delete(b.files, clientCACertPath) },
			wantErr: "lacks " + clientCACertPath + " or " + clientCAKeyPath,
		},
		{
			name: "server lacking the client CA key", role: cloudinit.ServerJoin,
			edit:    func(b *bootData) { delete(b.files, clientCAKeyPath) },
			wantErr: "lacks " + clientCACertPath + " or " + clientCAKeyPath,
		},
		{
			name: "server CA certificate that is not PEM", role: cloudinit.ServerInit,
			edit:    func(b *bootData) { b.files[serverCACertPath] = []byte("not a certificate") },
			wantErr: serverCACertPath + ":",
		},
		{
			name: "client CA key that is a certificate", role: cloudinit.ServerInit,
			edit:    func(b *bootData) { b.files[clientCAKeyPath] = b.files[clientCACertPath] },
			wantErr: clientCAKeyPath + ":",
		},
		{
			name: "server given the agent token", role: cloudinit.ServerJoin,
			edit:    func(b *bootData) { b.k3sConfig["token"] = j.agent },
			wantErr: "a server's token is an agent token",
		},
		{
			name: "agent given an agent token", role: cloudinit.Agent,
			edit: func(b *bootData) { b.k3sConfig["token"] = "K10::node:ag3nt" },
		},
		{
			name: "agent given a server-user token", role: cloudinit.Agent,
			edit: func(b *bootData) { b.k3sConfig["token"] = j.server },
		},
		{
			name: "token with another user", role: cloudinit.Agent,
			edit:    func(b *bootData) { b.k3sConfig["token"] = "K10::admin:pass" },
			wantErr: `token user "admin" is neither server nor node`,
		},
		{
			name: "bare passphrase on a server", role: cloudinit.ServerJoin,
			edit: func(b *bootData) { b.k3sConfig["token"] = "s3rver" },
		},
		{
			name: "no token", role: cloudinit.ServerJoin,
			edit:    func(b *bootData) { delete(b.k3sConfig, "token") },
			wantErr: k3sConfigPath + " has no token",
		},
		{
			name: "token that is not a string", role: cloudinit.Agent,
			edit:    func(b *bootData) { b.k3sConfig["token"] = 42 },
			wantErr: k3sConfigPath + " has no token",
		},
		{
			name: "malformed secure token", role: cloudinit.ServerInit,
			edit:    func(b *bootData) { b.k3sConfig["token"] = "K10abc:server:pass" },
			wantErr: "token: token starts with K10 but has no '::'",
		},
		{
			name: "cluster-init with server", role: cloudinit.ServerInit,
			edit:    func(b *bootData) { b.k3sConfig["server"] = testEndpoint },
			wantErr: "cluster-init together with server",
		},
		{
			name: "joining server with neither cluster-init nor server", role: cloudinit.ServerJoin,
			edit:    func(b *bootData) { delete(b.k3sConfig, "server") },
			wantErr: "no server URL and no cluster-init",
		},
		{
			name: "init server with cluster-init false", role: cloudinit.ServerInit,
			edit:    func(b *bootData) { b.k3sConfig["cluster-init"] = false },
			wantErr: "no server URL and no cluster-init",
		},
		{
			name: "agent without server", role: cloudinit.Agent,
			edit:    func(b *bootData) { delete(b.k3sConfig, "server") },
			wantErr: "no server URL and no cluster-init",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, _ := machineData(t, tc.role, ca, j)
			if tc.edit != nil {
				tc.edit(b)
			}
			err := b.checkStatic()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("checkStatic() = %v, want nil; k3s options %v", err, b.k3sConfig)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("checkStatic() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestInitSecrets(t *testing.T) {
	t.Parallel()
	ca, other := mustCAs(t, theCAs), mustCAs(t, otherCAs)
	withAgent := mustJoinTokens(t, token.Token{Server: "s3rver", Agent: "ag3nt"}, ca.serverCA)
	serverOnly := mustJoinTokens(t, token.Token{Server: "s3rver"}, ca.serverCA)
	pinnedElsewhere := mustJoinTokens(t, token.Token{Server: "s3rver", Agent: "ag3nt"}, other.serverCA)
	tests := []struct {
		name           string
		tokens         joinTokens
		edit           func(b *bootData)
		wantServerPass string
		wantAgentPass  string
		wantErr        string
	}{
		{name: "distinct agent token", tokens: withAgent, wantServerPass: "s3rver", wantAgentPass: "ag3nt"},
		{name: "no agent token", tokens: serverOnly, wantServerPass: "s3rver", wantAgentPass: "s3rver"},
		{
			name: "bare passphrases", tokens: joinTokens{server: "s3rver", agent: "ag3nt"},
			wantServerPass: "s3rver", wantAgentPass: "ag3nt",
		},
		{
			name: "unpinned secure tokens", tokens: joinTokens{server: "K10::server:s3rver", agent: "K10::node:ag3nt"},
			wantServerPass: "s3rver", wantAgentPass: "ag3nt",
		},
		{
			name: "token pinning another CA", tokens: joinTokens{server: pinnedElsewhere.server, agent: withAgent.agent},
			wantErr: "token's CA hash does not match the cluster's server CA",
		},
		{
			name: "agent token pinning another CA", tokens: joinTokens{server: withAgent.server, agent: pinnedElsewhere.agent},
			wantErr: "agent-token: token's CA hash does not match",
		},
		{
			name: "malformed agent token", tokens: withAgent,
			edit:    func(b *bootData) { b.k3sConfig["agent-token"] = "K10::nopass" },
			wantErr: "agent-token: token has no <user>:<passphrase>",
		},
		{
			name: "no token", tokens: withAgent,
			edit:    func(b *bootData) { delete(b.k3sConfig, "token") },
			wantErr: "has no token",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, _ := machineData(t, cloudinit.ServerInit, ca, tc.tokens)
			if tc.edit != nil {
				tc.edit(b)
			}
			s, err := b.initSecrets()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("initSecrets() = %+v, %v, want an error containing %q", s, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("initSecrets() = %v", err)
			}
			if s.serverPass != tc.wantServerPass || s.agentPass != tc.wantAgentPass {
				t.Errorf("passphrases = server %q, agent %q; want %q, %q", s.serverPass, s.agentPass, tc.wantServerPass, tc.wantAgentPass)
			}
			if string(s.caPEM) != string(ca.serverCA) {
				t.Errorf("caPEM is not the server CA certificate the data holds:\n%s", s.caPEM)
			}
		})
	}
}

func TestCheckJoin(t *testing.T) {
	t.Parallel()
	ca, other := mustCAs(t, theCAs), mustCAs(t, otherCAs)
	withAgent := mustJoinTokens(t, token.Token{Server: "s3rver-pass", Agent: "ag3nt-pass"}, ca.serverCA)
	serverOnly := mustJoinTokens(t, token.Token{Server: "s3rver-pass"}, ca.serverCA)
	wrongPass := mustJoinTokens(t, token.Token{Server: "wr0ng-pass", Agent: "wr0ng-agent"}, ca.serverCA)
	pinnedElsewhere := mustJoinTokens(t, token.Token{Server: "s3rver-pass", Agent: "ag3nt-pass"}, other.serverCA)
	userFile := func(content string) cloudinit.File { return cloudinit.File{Path: "/etc/motd", Content: content} }

	tests := []struct {
		name string
		// cluster are the tokens of the cluster's first server.
		cluster joinTokens
		role    cloudinit.Role
		// ca and tokens are what the joining machine is given.
		ca       clusterCAs
		tokens   joinTokens
		files    []cloudinit.File
		endpoint string // "" means testEndpoint
		edit     func(b *bootData)
		wantErr  string
	}{
		{name: "server with the right token", cluster: withAgent, role: cloudinit.ServerJoin, ca: ca, tokens: withAgent},
		{name: "agent with the agent token", cluster: withAgent, role: cloudinit.Agent, tokens: withAgent},
		{
			name: "server of a cluster without agent token", cluster: serverOnly, role: cloudinit.ServerJoin,
			ca: ca, tokens: serverOnly,
		},
		{
			name: "agent with the server passphrase when the cluster has no agent token", cluster: serverOnly,
			role: cloudinit.Agent, tokens: serverOnly,
		},
		{
			name: "server with the bare passphrase", cluster: withAgent, role: cloudinit.ServerJoin, ca: ca,
			tokens: joinTokens{server: "s3rver-pass", agent: withAgent.agent},
		},
		{
			name: "agent with an unpinned agent token", cluster: withAgent, role: cloudinit.Agent,
			tokens: joinTokens{server: withAgent.server, agent: "K10::node:ag3nt-pass"},
		},
		{
			name: "agent with a harmless user file", cluster: withAgent, role: cloudinit.Agent, tokens: withAgent,
			files: []cloudinit.File{userFile("welcome\n")},
		},
		{
			name: "server with a wrong passphrase", cluster: withAgent, role: cloudinit.ServerJoin, ca: ca,
			tokens: wrongPass, wantErr: "token does not match the cluster's",
		},
		{
			name: "agent with a wrong passphrase", cluster: withAgent, role: cloudinit.Agent,
			tokens: wrongPass, wantErr: "token does not match the cluster's",
		},
		{
			name: "server given the agent passphrase", cluster: withAgent, role: cloudinit.ServerJoin, ca: ca,
			tokens: joinTokens{server: "ag3nt-pass", agent: withAgent.agent}, wantErr: "token does not match the cluster's",
		},
		{
			name: "server token pinning another CA", cluster: withAgent, role: cloudinit.ServerJoin, ca: ca,
			tokens: pinnedElsewhere, wantErr: "token's CA hash does not match the cluster's server CA",
		},
		{
			name: "agent token pinning another CA", cluster: withAgent, role: cloudinit.Agent,
			tokens: pinnedElsewhere, wantErr: "token's CA hash does not match the cluster's server CA",
		},
		{
			name: "server URL differing from the endpoint", cluster: withAgent, role: cloudinit.ServerJoin, ca: ca,
			tokens: withAgent, endpoint: "https://cp.example.com:7443", wantErr: `server URL "https://cp.example.com:6443" is neither the cluster's endpoint nor a running server's own address`,
		},
		{
			name: "agent server URL differing from the endpoint", cluster: withAgent, role: cloudinit.Agent,
			tokens: withAgent, endpoint: "https://10.0.0.1:6443", wantErr: "is neither the cluster's endpoint nor a running server's own address",
		},
		{
			name: "agent given the server token while the cluster has an agent token", cluster: withAgent,
			role: cloudinit.Agent, tokens: joinTokens{server: withAgent.server}, wantErr: "token does not match the cluster's",
		},
		{
			name: "agent data holding the server passphrase in a user file", cluster: withAgent, role: cloudinit.Agent,
			tokens: withAgent, files: []cloudinit.File{userFile("K3S_TOKEN=s3rver-pass\n")},
			wantErr: "an agent's bootstrap data holds the server token",
		},
		{
			name: "agent data holding the whole server token in another file", cluster: withAgent, role: cloudinit.Agent,
			tokens: withAgent, files: []cloudinit.File{{Path: "/opt/join", Permissions: "0600", Content: withAgent.server}},
			wantErr: "an agent's bootstrap data holds the server token",
		},
		{
			name: "joining server given another server CA", cluster: withAgent, role: cloudinit.ServerJoin,
			ca: other, tokens: withAgent, wantErr: "a joining server is given another server CA than the cluster's",
		},
		{
			name: "joining server given another CA and a token pinning it", cluster: withAgent,
			role: cloudinit.ServerJoin, ca: other, tokens: pinnedElsewhere,
			wantErr: "token's CA hash does not match the cluster's server CA",
		},
		{
			name: "joining server without a token", cluster: withAgent, role: cloudinit.ServerJoin, ca: ca, tokens: withAgent,
			edit: func(b *bootData) { delete(b.k3sConfig, "token") }, wantErr: "has no token",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			first, _ := machineData(t, cloudinit.ServerInit, ca, tc.cluster)
			s, err := first.initSecrets()
			if err != nil {
				t.Fatalf("initSecrets() of the first server: %v", err)
			}
			b, raw := machineData(t, tc.role, tc.ca, tc.tokens, tc.files...)
			if err := b.checkStatic(); err != nil {
				t.Fatalf("checkStatic() of the joining machine = %v: the case should fail at the join, if at all", err)
			}
			if tc.edit != nil {
				tc.edit(b)
			}
			endpoint := tc.endpoint
			if endpoint == "" {
				endpoint = testEndpoint
			}
			err = b.checkJoin(s, only(endpoint), raw)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("checkJoin() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("checkJoin() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestCheckJoinBareSecrets covers secrets with no pin at all: a cluster whose first
// server was given bare passphrases.
func TestCheckJoinBareSecrets(t *testing.T) {
	t.Parallel()
	ca := mustCAs(t, theCAs)
	s := secrets{caPEM: ca.serverCA, serverPass: "srv", agentPass: "agt"}
	tests := []struct {
		role    cloudinit.Role
		tokens  joinTokens
		wantErr bool
	}{
		{role: cloudinit.ServerJoin, tokens: joinTokens{server: "srv"}},
		{role: cloudinit.ServerJoin, tokens: joinTokens{server: "agt"}, wantErr: true},
		{role: cloudinit.Agent, tokens: joinTokens{agent: "agt"}},
		{role: cloudinit.Agent, tokens: joinTokens{agent: "K10::node:agt"}},
		{role: cloudinit.Agent, tokens: joinTokens{agent: "srv"}, wantErr: true},
	}
	for _, tc := range tests {
		b, raw := machineData(t, tc.role, ca, tc.tokens)
		err := b.checkJoin(s, only(testEndpoint), raw)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s with tokens %+v: checkJoin() = %v, want error: %v", tc.role, tc.tokens, err, tc.wantErr)
		}
	}
}

// only reaches the cluster at one URL, as a cluster with no running server but its
// endpoint does.
func only(url string) func(string) bool { return func(u string) bool { return u == url } }
