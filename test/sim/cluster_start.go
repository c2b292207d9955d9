package sim

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/test/envtest"
	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// initialize starts the cluster from its first server's data: the workload API on the
// endpoint, with the CAs from the data, and k3s's etcd controller; on a datastore
// cluster, kine on the data's datastore-endpoint instead of etcd. Booting the same
// machine again changes nothing; another cluster-init server is refused, as it would
// start a second, separate cluster. Any server of a datastore cluster starts the API if
// it is not up yet: k3s has no first server there, every server meets the others in
// the datastore (checkJoin then checks that they name the same one).
//
// A server that restores (cluster-reset with a restore path, restore.found) starts
// the cluster from the snapshot's contents with itself as etcd's only member
// (pkg/etcd/etcd.go Reset; v1.34.9, v1.35.4, v1.36.2): on a new cluster, and on one
// whose servers are all gone (its API down), which brings the API back on the same
// endpoint. A snapshot taken with another token fails as k3s fails
// (k3smodel.ErrTokenMismatch). While a server of the old cluster still runs its etcd,
// the restore is refused: k3s would start a second cluster behind the same endpoint,
// which the simulator does not play.
func (c *workloadCluster) initialize(ctx context.Context, machine string, b *bootData, restore restoreSource) error {
	started, err := c.start(ctx, machine, b, restore)
	if started {
		// The SimCluster shows the datastore, which no member change would announce.
		c.onChange(c.key)
	}
	return err
}

// start is initialize under the lock; it says whether it started the API.
func (c *workloadCluster) start(ctx context.Context, machine string, b *bootData, restore restoreSource) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false, errStopped
	}
	if c.api != nil || c.quorumLost {
		switch {
		case c.initMachine == machine || b.datastore() != "":
			return false, nil
		case !restore.found || c.api != nil:
			return false, fmt.Errorf("cluster-init on a cluster that %s initialized already: this server would start a second, separate cluster", c.initMachine)
		}
		if up := c.upMemberNamesLocked(); len(up) > 0 {
			return false, fmt.Errorf("cluster-reset while servers %v of the old cluster still run their etcd: k3s would start a second cluster behind the same endpoint; stop k3s on every server first", up)
		}
	}
	s, err := b.initSecrets()
	if err != nil {
		return false, err
	}
	if restore.data != nil && restore.data.serverPass != s.serverPass {
		return false, k3smodel.ErrTokenMismatch
	}
	if err := c.startAPI(ctx, b, s, restore.data); err != nil {
		return false, err
	}
	if c.quorumLost {
		c.restores++
	}
	c.initMachine, c.secrets, c.quorumLost = machine, s, false
	// The CAs come with the data, so a restore keeps them (certs.go).
	c.cas = k3sCAs(b, time.Now())
	c.members, c.removed = map[string]*member{}, map[string]string{}
	return true, nil
}

// startAPI starts the store (kine or etcd, loaded with seed), the apiserver on a port
// of its own, and the front on the endpoint; with etcd, also k3s's etcd controller.
func (c *workloadCluster) startAPI(ctx context.Context, b *bootData, s secrets, seed *snapshotData) (retErr error) {
	var k *envtest.Kine
	var e *clusterEtcd
	var api *envtest.WorkloadAPIServer
	var f *front
	defer func() {
		if retErr != nil {
			retErr = errors.Join(retErr, f.stop(), stopAPI(api), stopKine(k), e.stop())
		}
	}()
	id, err := newFrontIdentity()
	if err != nil {
		return err
	}
	opts := envtest.WorkloadOptions{Dir: c.dir, RequestHeaderCA: id.caPEM, Issuer: c.endpoint()}
	if s.datastore != "" {
		// Before the port is released: a datastore that refuses the server leaves
		// the endpoint reserved for the next try.
		if k, err = envtest.StartKine(ctx, s.datastore); err != nil {
			return err
		}
		opts.EtcdURL = k.URL
	} else {
		if e, err = startClusterEtcd(ctx, c.dir, seed); err != nil {
			return err
		}
		opts.EtcdURL = e.URL()
	}
	api, err = envtest.StartWorkloadAPIServerWith(opts,
		b.files[serverCACertPath], b.files[serverCAKeyPath], b.files[clientCACertPath])
	if err != nil {
		return fmt.Errorf("starting the workload API: %w", err)
	}
	cfg, err := api.AdminConfig(b.files[clientCACertPath], b.files[clientCAKeyPath])
	var cl client.Client
	if err == nil {
		cl, err = client.New(cfg, client.Options{})
	}
	var clientset kubernetes.Interface
	if err == nil {
		clientset, err = kubernetes.NewForConfig(cfg)
	}
	if err != nil {
		return fmt.Errorf("workload admin client: %w", err)
	}
	if s.datastore == "" {
		// k3s installs its ETCDSnapshotFile kind with its first etcd server.
		if err := envtest.InstallETCDSnapshotFileCRD(ctx, cfg); err != nil {
			return err
		}
	}
	c.release()
	f, err = startFront(c.port, b.files[serverCACertPath], b.files[serverCAKeyPath], b.files[clientCACertPath], id, api.Endpoint(), c.serveSupervisor)
	if err != nil {
		return err
	}
	c.api, c.kine, c.etcd, c.front, c.config, c.client = api, k, e, f, cfg, cl
	if e != nil {
		etcdCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c.stopEtcd = cancel
		go runEtcdController(etcdCtx, clientset, c)
	}
	return nil
}

func stopAPI(api *envtest.WorkloadAPIServer) error {
	if api == nil {
		return nil
	}
	return api.Stop()
}

// upMemberNamesLocked lists the Nodes whose etcd members are up, sorted.
func (c *workloadCluster) upMemberNamesLocked() []string {
	var up []string
	for node, m := range c.members {
		if m.up {
			up = append(up, node)
		}
	}
	sort.Strings(up)
	return up
}

// capture snapshots the cluster's etcd now.
func (c *workloadCluster) capture(ctx context.Context) (*snapshotData, error) {
	c.mu.Lock()
	e, pass := c.etcd, c.secrets.serverPass
	c.mu.Unlock()
	if e == nil {
		return nil, errors.New("the cluster runs no etcd to snapshot")
	}
	c.snapshotMu.Lock()
	defer c.snapshotMu.Unlock()
	return e.capture(ctx, pass)
}

// keepLocalSnapshot puts a snapshot file on node's disk.
func (c *workloadCluster) keepLocalSnapshot(node, path string, data *snapshotData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.localSnapshots == nil {
		c.localSnapshots = map[string]map[string]*snapshotData{}
	}
	if c.localSnapshots[node] == nil {
		c.localSnapshots[node] = map[string]*snapshotData{}
	}
	c.localSnapshots[node][path] = data
}

// serverSnapshotSettings notes a server's snapshot settings.
func (c *workloadCluster) serverSnapshotSettings(node string, p *snapshotPlan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.serverSettings == nil {
		c.serverSettings = map[string]*snapshotPlan{}
	}
	c.serverSettings[node] = p
}
