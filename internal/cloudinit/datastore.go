package cloudinit

import (
	"errors"
	"strings"
)

// Where the datastore TLS files go: beside k3s's own server certificates, readable by
// root only. k3s itself only writes the files it knows into server/tls, so a
// directory of our own there is left alone.
const (
	datastoreDir      = "/var/lib/rancher/k3s/server/tls/datastore/"
	datastoreCAPath   = datastoreDir + "ca.crt"
	datastoreCertPath = datastoreDir + "client.crt"
	datastoreKeyPath  = datastoreDir + "client.key"
)

// Datastore holds the values read from the Secrets that
// spec.serverConfig.datastore references. Every field is a secret or close to one:
// the endpoint usually carries a password.
type Datastore struct {
	// Endpoint is k3s's datastore-endpoint.
	Endpoint string
	// CACert, ClientCert and ClientKey are PEM; empty means not used.
	CACert, ClientCert, ClientKey string
}

// String keeps the values out of logs should the struct ever be printed.
func (Datastore) String() string { return "datastore(redacted)" }

// checkDatastore rejects datastore input that would make a machine start something
// else than what the spec asks. Its errors never quote a value.
func checkDatastore(in Input) error {
	specSet := in.Spec.ServerConfig.Datastore != nil
	switch {
	case in.Role == Agent && in.Datastore != nil:
		return errors.New("datastore values are for servers only; an agent must not receive the datastore credentials")
	case in.Role == Agent:
		return nil
	case specSet && in.Datastore == nil:
		// Rendering anyway would start embedded etcd: a second, empty cluster.
		return errors.New("spec.serverConfig.datastore is set but its values were not resolved")
	case !specSet && in.Datastore != nil:
		return errors.New("datastore values were given but spec.serverConfig.datastore is not set")
	case in.Datastore == nil:
		return nil
	}
	d := in.Datastore
	if strings.TrimSpace(d.Endpoint) == "" {
		return errors.New("the datastore endpoint is empty")
	}
	if (d.ClientCert == "") != (d.ClientKey == "") {
		return errors.New("the datastore client certificate and key go together")
	}
	return nil
}

// datastoreOptions puts the datastore into k3s's options. The first server needs no
// cluster-init (that starts embedded etcd) and no server needs a server URL: on a
// shared datastore, servers that share the token are one cluster.
func datastoreOptions(o k3sOptions, d *Datastore) {
	o["datastore-endpoint"] = d.Endpoint
	if d.CACert != "" {
		o["datastore-cafile"] = datastoreCAPath
	}
	if d.ClientCert != "" {
		o["datastore-certfile"] = datastoreCertPath
		o["datastore-keyfile"] = datastoreKeyPath
	}
}

// addDatastoreFiles writes the datastore's TLS files, all 0600 (addGenerated).
func (s *fileSet) addDatastoreFiles(d *Datastore) error {
	for _, f := range []struct{ path, content string }{
		{datastoreCAPath, d.CACert},
		{datastoreCertPath, d.ClientCert},
		{datastoreKeyPath, d.ClientKey},
	} {
		if f.content == "" {
			continue
		}
		if err := s.addGenerated(f.path, []byte(f.content)); err != nil {
			return err
		}
	}
	return nil
}
