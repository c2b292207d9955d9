package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/test/envtest"
	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// errNotInitialized is returned to machines that join a cluster whose first server has
// not started yet; like k3s, they try again.
var errNotInitialized = errors.New("the cluster's first server has not started yet")

// errStopped is returned to machines of a cluster stopped with its provider or its
// SimCluster.
var errStopped = errors.New("the simulated cluster is stopped")

// errQuorumLost is what every request gets once etcd has lost quorum.
var errQuorumLost = errors.New("etcd lost quorum: the workload cluster's API is down")

// workloadCluster is one simulated k3s cluster: the API its servers serve, the secrets
// its first server set up, and its etcd members.
type workloadCluster struct {
	key  client.ObjectKey
	port int
	dir  string
	// onChange is called, without the lock, after the members or the API changed.
	onChange func(client.ObjectKey)
	// release frees the endpoint's port, held since the SimCluster chose it so that
	// nothing else takes it, just before the API binds it.
	release func()

	mu          sync.Mutex
	initMachine string
	secrets     secrets
	api         *envtest.WorkloadAPIServer
	config      *rest.Config
	client      client.Client
	members     map[string]*member
	// removed are the members removed so far, by Node: a removal whose record on the
	// Node failed is answered again with the same name.
	removed    map[string]string
	quorumLost bool
	stopEtcd   context.CancelFunc
	// closed is set once the cluster is stopped, for good: the manager may still
	// reconcile after the provider stopped, and must start no process then.
	closed bool
	// kine stores the API's data in the external datastore of a datastore cluster;
	// nil with etcd.
	kine *envtest.Kine
	// etcd stores it otherwise; nil on a datastore cluster.
	etcd *clusterEtcd
	// front answers on the endpoint (front.go).
	front *front
	// localSnapshots are the snapshot files on each server's disk, by Node and path:
	// they go with the machine.
	localSnapshots map[string]map[string]*snapshotData
	// serverSettings are each etcd server's snapshot settings, by Node: what an
	// on-demand save on it starts from.
	serverSettings map[string]*snapshotPlan
	// restores counts restores of the cluster after all its servers were gone.
	restores int
	// kubeletVersions are the versions the Nodes' kubelets run, by Node, kept apart
	// from the Nodes that a restore rolls back (kubeletversion.go).
	kubeletVersions map[string]string
	// snapshotMu serializes snapshots. k3s refuses a save while another runs
	// ("snapshot save already in progress"); the simulator waits instead, as its
	// scheduled snapshots come every few seconds, not every few hours.
	snapshotMu sync.Mutex
	// snapshots are the servers with an etcd snapshot schedule, by Node.
	snapshots map[string]*snapshotState
	// stopSUC ends the system-upgrade-controller stand-in; nil while none runs.
	stopSUC context.CancelFunc
	// supervisors are the running servers' own URLs, by Node: where a node can join
	// besides the endpoint (k3smodel.SupervisorPort).
	supervisors map[string]string
	// registeredTaints are the taints each Node was created with, by Node.
	registeredTaints map[string][]corev1.Taint
	// cas are the cluster's CAs, from the first server's data (certs.go).
	cas map[k3smodel.CAName]k3smodel.CA
	// certs are the nodes' certificates, by Node (certs.go).
	certs map[string]*nodeCerts
	// signers are the leaf lifetimes the servers' k3s sign with, by Node
	// (certlifetime.go).
	signers map[string]time.Duration
}

// datastoreAddress is the datastore of a datastore cluster, without credentials, for
// the SimCluster's status; "" with etcd or before the API started.
func (c *workloadCluster) datastoreAddress() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.secrets.datastore == "" {
		return ""
	}
	u, err := url.Parse(c.secrets.datastore)
	if err != nil {
		return "(unparsable)"
	}
	u.User = nil
	return u.String()
}

// member is an etcd member, on the server whose Node has the given name.
type member struct {
	name string
	up   bool
}

// stopKine stops k, if any.
func stopKine(k *envtest.Kine) error {
	if k == nil {
		return nil
	}
	return k.Stop()
}

// ready returns the workload client once the cluster serves its API.
func (c *workloadCluster) ready() (client.Client, secrets, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.quorumLost:
		return nil, c.secrets, errQuorumLost
	case c.api == nil:
		return nil, c.secrets, errNotInitialized
	}
	return c.client, c.secrets, nil
}

// endpoint is the URL every machine must be given as its server.
func (c *workloadCluster) endpoint() string {
	return fmt.Sprintf("https://127.0.0.1:%d", c.port)
}

// addMember makes the server with the given Node an etcd member and returns the
// member's name, k3s's "<node>-<hash>".
func (c *workloadCluster) addMember(node string) (string, error) {
	c.mu.Lock()
	if c.quorumLost {
		c.mu.Unlock()
		return "", errQuorumLost
	}
	m, ok := c.members[node]
	if !ok {
		m = &member{name: node + "-" + caHash([]byte(node))[:8], up: true}
		c.members[node] = m
	}
	c.mu.Unlock()
	if !ok {
		c.onChange(c.key)
	}
	return m.name, nil
}

// removeMember is etcd's member removal, as k3s's controller asks for it; it returns
// the removed member's name, also when it was removed before, and false for a Node
// that never was a member.
func (c *workloadCluster) removeMember(node string) (string, bool, error) {
	c.mu.Lock()
	if c.quorumLost {
		c.mu.Unlock()
		return "", false, errQuorumLost
	}
	m, ok := c.members[node]
	if !ok {
		name, before := c.removed[node]
		c.mu.Unlock()
		return name, before, nil
	}
	delete(c.members, node)
	c.removed[node] = m.name
	c.mu.Unlock()
	c.onChange(c.key)
	return m.name, true, nil
}

// serverGone is a server's machine going away: a member it still is goes down with it.
func (c *workloadCluster) serverGone(node string) error {
	c.mu.Lock()
	delete(c.supervisors, node)
	delete(c.localSnapshots, node)
	c.mu.Unlock()
	return c.setMemberUp(node, false)
}

// serverUp records a running server's own URL, https://<its address>:<its
// supervisor port>, where later nodes may join.
func (c *workloadCluster) serverUp(node, address string, port int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.supervisors == nil {
		c.supervisors = map[string]string{}
	}
	c.supervisors[node] = "https://" + net.JoinHostPort(address, strconv.Itoa(port))
}

// reaches says whether a server URL leads into the cluster: its endpoint, or a
// running server's own URL. A server that has gone is no longer there to answer.
func (c *workloadCluster) reaches(url string) bool {
	if url == c.endpoint() {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range c.supervisors {
		if u == url {
			return true
		}
	}
	return false
}

// setMemberUp marks the member of the server with the given Node up or down, as k3s
// starts or stops on it. etcd loses quorum when fewer than a majority of the members
// are up, which takes the API down; that is for good: a member coming back later does
// not restart the cluster. A Node that is no member changes nothing. On a cluster that
// already lost quorum the member's state is still recorded (a restore waits for every
// old server to stop its etcd) but nothing else changes.
func (c *workloadCluster) setMemberUp(node string, up bool) error {
	c.mu.Lock()
	m, ok := c.members[node]
	if !ok || m.up == up {
		c.mu.Unlock()
		return nil
	}
	m.up = up
	if c.quorumLost {
		c.mu.Unlock()
		return nil
	}
	var err error
	if !up && c.upMembersLocked() < len(c.members)/2+1 {
		c.quorumLost = true
		err = c.stopLocked()
	}
	c.mu.Unlock()
	c.onChange(c.key)
	return err
}

func (c *workloadCluster) upMembersLocked() int {
	up := 0
	for _, m := range c.members {
		if m.up {
			up++
		}
	}
	return up
}

// memberNames lists the members, up or down, sorted.
func (c *workloadCluster) memberNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.members))
	for _, m := range c.members {
		names = append(names, m.name)
	}
	slices.Sort(names)
	return names
}

func (c *workloadCluster) status() (apiUp, quorumLost bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.api != nil && !c.quorumLost, c.quorumLost
}

// stop ends the API and the etcd controller.
func (c *workloadCluster) stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return c.stopLocked()
}

func (c *workloadCluster) stopLocked() error {
	if c.stopEtcd != nil {
		c.stopEtcd()
	}
	if c.stopSUC != nil {
		c.stopSUC()
		c.stopSUC = nil
	}
	if c.api == nil {
		return nil
	}
	err := errors.Join(c.front.stop(), c.api.Stop())
	// After the API, which would otherwise spend its shutdown retrying its store.
	err = errors.Join(err, stopKine(c.kine), c.etcd.stop())
	c.api, c.kine, c.etcd, c.front = nil, nil, nil, nil
	return err
}
