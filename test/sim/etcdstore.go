package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/capk3s/capk3s/test/envtest"
)

// etcdStartTimeout bounds etcd answering its health check, as envtest's workload
// servers allow on a loaded machine.
const etcdStartTimeout = time.Minute

// seedBatch is how many keys one transaction restores; etcd's default limit is 128.
const seedBatch = 100

// snapshotData is what a simulated etcd snapshot holds: every key of the workload
// etcd at one revision (the Kubernetes objects), and the server token's password the
// cluster ran with, standing for the bootstrap data k3s stores in etcd encrypted
// with that token (pkg/cluster/storage.go), which is what a restore with another
// token fails on. Leases are not kept: a restored key lives until deleted.
type snapshotData struct {
	kvs        []keyValue
	serverPass string
	size       int64
}

type keyValue struct {
	key, value  []byte
	modRevision int64
}

// clusterEtcd is a workload cluster's etcd: a real etcd process the simulator owns,
// so that it can read every key for a snapshot and load a snapshot's keys before the
// apiserver starts on a restored cluster.
type clusterEtcd struct {
	dir    string
	proc   *crenvtest.Etcd
	log    *os.File
	client *clientv3.Client
	// last is the previous capture by key: a key unchanged since (same revision)
	// shares its bytes, so that frequent scheduled snapshots cost little memory.
	last map[string]keyValue
}

// startClusterEtcd starts an empty etcd under parent ("" is the system's temporary
// directory) and, given a snapshot, loads its keys.
func startClusterEtcd(ctx context.Context, parent string, seed *snapshotData) (_ *clusterEtcd, retErr error) {
	dir, err := os.MkdirTemp(parent, "capk3s-etcd-")
	if err != nil {
		return nil, err
	}
	e := &clusterEtcd{dir: dir}
	defer func() {
		if retErr != nil {
			retErr = errors.Join(retErr, e.stop())
		}
	}()
	if e.log, err = os.Create(filepath.Join(dir, "etcd.log")); err != nil {
		return nil, err
	}
	e.proc = &crenvtest.Etcd{
		Path: filepath.Join(envtest.AssetsDir(), "etcd"), DataDir: filepath.Join(dir, "data"),
		StartTimeout: etcdStartTimeout, Out: e.log, Err: e.log,
	}
	if err := e.proc.Start(); err != nil {
		return nil, fmt.Errorf("starting the workload etcd: %w", err)
	}
	e.client, err = clientv3.New(clientv3.Config{Endpoints: []string{e.proc.URL.String()}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("workload etcd client: %w", err)
	}
	if seed != nil {
		if err := e.load(ctx, seed); err != nil {
			return nil, fmt.Errorf("loading the snapshot into the workload etcd: %w", err)
		}
	}
	return e, nil
}

// URL is the etcd client URL the apiserver stores the cluster in.
func (e *clusterEtcd) URL() string { return e.proc.URL.String() }

// load writes a snapshot's keys into the empty etcd.
func (e *clusterEtcd) load(ctx context.Context, s *snapshotData) error {
	for start := 0; start < len(s.kvs); start += seedBatch {
		batch := s.kvs[start:min(start+seedBatch, len(s.kvs))]
		ops := make([]clientv3.Op, 0, len(batch))
		for _, kv := range batch {
			ops = append(ops, clientv3.OpPut(string(kv.key), string(kv.value)))
		}
		if _, err := e.client.Txn(ctx).Then(ops...).Commit(); err != nil {
			return err
		}
	}
	return nil
}

// capture reads every key at one revision: a snapshot of the cluster now. Not safe
// for concurrent use: the cluster's snapshotMu serializes captures, as k3s allows one
// save at a time.
func (e *clusterEtcd) capture(ctx context.Context, serverPass string) (*snapshotData, error) {
	resp, err := e.client.Get(ctx, "\x00", clientv3.WithFromKey())
	if err != nil {
		return nil, fmt.Errorf("reading the workload etcd for a snapshot: %w", err)
	}
	s := &snapshotData{serverPass: serverPass, kvs: make([]keyValue, 0, len(resp.Kvs))}
	next := make(map[string]keyValue, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		v, ok := e.last[string(kv.Key)]
		if !ok || v.modRevision != kv.ModRevision {
			v = keyValue{key: kv.Key, value: kv.Value, modRevision: kv.ModRevision}
		}
		next[string(v.key)] = v
		s.kvs = append(s.kvs, v)
		s.size += int64(len(v.key) + len(v.value))
	}
	e.last = next
	return s, nil
}

// stop ends etcd and removes its files; nil-safe.
func (e *clusterEtcd) stop() error {
	if e == nil {
		return nil
	}
	var errs []error
	if e.client != nil {
		errs = append(errs, e.client.Close())
	}
	if e.proc != nil {
		errs = append(errs, e.proc.Stop())
	}
	if e.log != nil {
		errs = append(errs, e.log.Close())
	}
	errs = append(errs, os.RemoveAll(e.dir))
	return errors.Join(errs...)
}
