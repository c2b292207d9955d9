package sim

import (
	"strings"
	"testing"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/token"
)

const testDatastore = "postgres://k3s:pw@db.example.com:5432/k3s?sslmode=disable"

// datastoreServerData renders a datastore server's data as internal/bootstrap would:
// no server URL, whatever the role.
func datastoreServerData(t testing.TB, role cloudinit.Role, ca clusterCAs, j joinTokens, d cloudinit.Datastore) (*bootData, []byte) {
	t.Helper()
	in := cloudinit.Input{
		Role: role, Version: testVersion, Token: j.server, AgentToken: j.agent,
		Certificates: ca.files, TLSSANs: []string{"cp.example.com"}, Datastore: &d,
	}
	in.Spec.ServerConfig.Datastore = &bootstrapv1.Datastore{EndpointSecret: bootstrapv1.SecretKeyReference{Name: "db", Key: "endpoint"}}
	return parseRendered(t, mustRender(t, in))
}

func TestCheckDatastoreServer(t *testing.T) {
	t.Parallel()
	ca := mustCAs(t, theCAs)
	j := mustJoinTokens(t, token.Token{Server: "s3rver", Agent: "ag3nt"}, ca.serverCA)
	tests := []struct {
		name    string
		role    cloudinit.Role
		edit    func(b *bootData)
		wantErr string
	}{
		{name: "first server", role: cloudinit.ServerInit},
		{name: "joining server", role: cloudinit.ServerJoin},
		{
			name: "with cluster-init", role: cloudinit.ServerInit,
			edit:    func(b *bootData) { b.k3sConfig["cluster-init"] = true },
			wantErr: "cluster-init together with datastore-endpoint",
		},
		{
			name: "with a server URL", role: cloudinit.ServerJoin,
			edit:    func(b *bootData) { b.k3sConfig["server"] = testEndpoint },
			wantErr: "server together with datastore-endpoint",
		},
		{
			name: "naming a CA file it lacks", role: cloudinit.ServerJoin,
			edit:    func(b *bootData) { b.k3sConfig["datastore-cafile"] = "/nowhere/ca.crt" },
			wantErr: "datastore-cafile /nowhere/ca.crt is not in the bootstrap data",
		},
	}
	for _, tc := range tests {
		b, _ := datastoreServerData(t, tc.role, ca, j, cloudinit.Datastore{Endpoint: testDatastore})
		if tc.edit != nil {
			tc.edit(b)
		}
		err := b.checkStatic()
		if tc.wantErr == "" && err != nil {
			t.Errorf("%s: checkStatic: %v", tc.name, err)
		}
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: checkStatic = %v, want an error containing %q", tc.name, err, tc.wantErr)
		}
	}

	// The TLS files the product writes are there, so a server naming them passes.
	b, _ := datastoreServerData(t, cloudinit.ServerJoin, ca, j, cloudinit.Datastore{
		Endpoint: testDatastore, CACert: string(ca.serverCA), ClientCert: string(ca.serverCA), ClientKey: "key",
	})
	if err := b.checkStatic(); err != nil {
		t.Errorf("server with datastore TLS files: checkStatic: %v", err)
	}
}

func TestCheckJoinDatastore(t *testing.T) {
	t.Parallel()
	ca := mustCAs(t, theCAs)
	j := mustJoinTokens(t, token.Token{Server: "s3rver", Agent: "ag3nt"}, ca.serverCA)
	first, _ := datastoreServerData(t, cloudinit.ServerInit, ca, j, cloudinit.Datastore{Endpoint: testDatastore})
	s, err := first.initSecrets()
	if err != nil {
		t.Fatal(err)
	}
	if s.datastore != testDatastore {
		t.Fatalf("initSecrets datastore = %q, want the first server's", s.datastore)
	}

	if err := first.checkJoin(s, only(testEndpoint), nil); err != nil {
		t.Errorf("first server: checkJoin: %v", err)
	}
	joiner, raw := datastoreServerData(t, cloudinit.ServerJoin, ca, j, cloudinit.Datastore{Endpoint: testDatastore})
	if err := joiner.checkJoin(s, only(testEndpoint), raw); err != nil {
		t.Errorf("joining server: checkJoin: %v", err)
	}

	elsewhere, raw := datastoreServerData(t, cloudinit.ServerJoin, ca, j, cloudinit.Datastore{Endpoint: strings.Replace(testDatastore, ":pw@", ":zz9Secret@", 1)})
	err = elsewhere.checkJoin(s, only(testEndpoint), raw)
	if err == nil || !strings.Contains(err.Error(), "datastore-endpoint is not the cluster's") {
		t.Errorf("server on another datastore: checkJoin = %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "zz9Secret") {
		t.Errorf("checkJoin's error quotes the endpoint's password: %v", err)
	}

	wrong := mustJoinTokens(t, token.Token{Server: "wr0ng", Agent: "ag3nt"}, ca.serverCA)
	wrongToken, raw := datastoreServerData(t, cloudinit.ServerJoin, ca, wrong, cloudinit.Datastore{Endpoint: testDatastore})
	if err := wrongToken.checkJoin(s, only(testEndpoint), raw); err == nil || !strings.Contains(err.Error(), "token does not match") {
		t.Errorf("server with another token: checkJoin = %v", err)
	}

	etcdServer, raw := machineData(t, cloudinit.ServerJoin, ca, j)
	if err := etcdServer.checkJoin(s, only(testEndpoint), raw); err == nil {
		t.Error("an etcd server joining a datastore cluster: checkJoin passed")
	}

	agent, raw := machineData(t, cloudinit.Agent, ca, j)
	if err := agent.checkJoin(s, only(testEndpoint), raw); err != nil {
		t.Errorf("agent of a datastore cluster: checkJoin: %v", err)
	}
}
