package sim

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// restoreFailedReason: the first server's restore could not be carried out, so k3s
// exited and, as the bootstrap data starts it only after a successful restore, never
// ran.
const restoreFailedReason = "RestoreFailed"

// s3World is the object stores of every S3 endpoint the simulated machines talk to:
// they are outside any cluster, and outlive them, as a bucket does. Keys are
// "<endpoint>/<bucket>/<key>"; the endpoint is as config.yaml (or a snapshot
// request) names it. A value is the snapshot's contents; nil for an object a test put
// without contents.
var s3World = struct {
	sync.Mutex
	objects map[string]*snapshotData
}{objects: map[string]*snapshotData{}}

// PutS3Object puts an object into the simulated S3, as a snapshot uploaded by an
// earlier cluster: a test seeds the snapshot a first server restores from. It holds
// no Kubernetes objects: a restore from it starts an empty cluster.
func PutS3Object(endpoint, bucket, key string) {
	putS3Snapshot(endpoint, bucket, key, nil)
}

// S3Objects lists the keys in a simulated bucket under prefix, sorted: what a test
// reads to see which snapshots a cluster uploaded.
func S3Objects(endpoint, bucket, prefix string) []string {
	s3World.Lock()
	defer s3World.Unlock()
	var keys []string
	for k := range s3World.objects {
		if rest, ok := strings.CutPrefix(k, endpoint+"/"+bucket+"/"); ok && strings.HasPrefix(rest, prefix) {
			keys = append(keys, rest)
		}
	}
	slices.Sort(keys)
	return keys
}

// DeleteS3Object removes an object from the simulated S3, as a user emptying a
// bucket would.
func DeleteS3Object(endpoint, bucket, key string) {
	s3World.Lock()
	defer s3World.Unlock()
	delete(s3World.objects, endpoint+"/"+bucket+"/"+key)
}

// s3ListObjects are the objects of a simulated bucket with the token hash k3s
// writes into each object's metadata (pkg/etcd/s3/s3.go uploadSnapshot): that of
// the server token of the cluster whose snapshot it is; none for an object a test
// put without contents.
func s3ListObjects(endpoint, bucket string) []k3smodel.S3ListObject {
	s3World.Lock()
	defer s3World.Unlock()
	var out []k3smodel.S3ListObject
	for k, data := range s3World.objects {
		key, ok := strings.CutPrefix(k, endpoint+"/"+bucket+"/")
		if !ok {
			continue
		}
		o := k3smodel.S3ListObject{Key: key}
		if data != nil && data.serverPass != "" {
			o.TokenHash = k3smodel.TokenHash(data.serverPass)
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b k3smodel.S3ListObject) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// TakeS3Object removes an object from the simulated S3 and returns what puts it back
// with its contents: a test makes a snapshot unreadable for a while, as an S3 outage
// or a lifecycle rule would, so that a first server's restore fails.
func TakeS3Object(endpoint, bucket, key string) (putBack func()) {
	s3World.Lock()
	defer s3World.Unlock()
	data, ok := s3World.objects[endpoint+"/"+bucket+"/"+key]
	delete(s3World.objects, endpoint+"/"+bucket+"/"+key)
	return func() {
		if ok {
			putS3Snapshot(endpoint, bucket, key, data)
		}
	}
}

func putS3Snapshot(endpoint, bucket, key string, data *snapshotData) {
	s3World.Lock()
	defer s3World.Unlock()
	s3World.objects[endpoint+"/"+bucket+"/"+key] = data
}

func s3Snapshot(endpoint, bucket, key string) (*snapshotData, bool) {
	s3World.Lock()
	defer s3World.Unlock()
	data, ok := s3World.objects[endpoint+"/"+bucket+"/"+key]
	return data, ok
}

// restoreSource is what a first server's data restores: found says it restores at
// all; data is the snapshot's contents, nil for an object put without contents or
// a local file the data writes (whose bytes the simulator does not read as a
// snapshot).
type restoreSource struct {
	found bool
	data  *snapshotData
}

// checkRestore carries out, as far as the simulator can judge, the restore the
// data's commands run: a `k3s server` with cluster-reset-restore-path, read as k3s
// reads it (k3smodel.PlanRestore): the object must be in the simulated S3 or, without
// S3, the file must be one the data writes (the simulator does not see a machine
// image). It returns what is restored.
func (b *bootData) checkRestore() (restoreSource, error) {
	var src restoreSource
	for _, cmd := range b.commands {
		if !strings.Contains(cmd, "--cluster-reset-restore-path") {
			continue
		}
		flags, err := k3sServerFlags(cmd)
		if err != nil {
			return src, err
		}
		restorePath, asked := flags["cluster-reset-restore-path"]
		if !asked {
			continue
		}
		s3, _ := b.k3sConfig["etcd-s3"].(bool)
		if v, ok := flags["etcd-s3"]; ok {
			if s3, err = strconv.ParseBool(v); err != nil {
				return src, fmt.Errorf("--etcd-s3=%s is not a boolean", v)
			}
		}
		_, reset := flags["cluster-reset"]
		plan, err := k3smodel.PlanRestore(restorePath, reset, s3, b.str("etcd-s3-folder"))
		if err != nil {
			return src, err
		}
		endpoint := b.str("etcd-s3-endpoint")
		if endpoint == "" {
			endpoint = defaultS3Endpoint
		}
		// A download from S3, or a compressed file's unpacking, goes into the snapshot
		// folder, which k3s makes only when it is its default one (pkg/etcd/etcd.go
		// Start and Restore; v1.34.9, v1.35.4, v1.36.2).
		if plan.S3 || strings.HasSuffix(plan.File, ".zip") {
			folders := b.madeFolders()
			if _, err := k3smodel.SnapshotDir(b.str("etcd-snapshot-dir"), func(d string) bool { return folders[path.Clean(d)] }); err != nil {
				return src, fmt.Errorf("failed to get the snapshot dir: %w", err)
			}
		}
		if plan.S3 {
			data, ok := s3Snapshot(endpoint, b.str("etcd-s3-bucket"), plan.Key)
			if !ok {
				return src, plan.Failure(b.str("etcd-s3-bucket"))
			}
			src = restoreSource{found: true, data: data}
			continue
		}
		if _, written := b.files[plan.File]; !written {
			return src, plan.Failure("")
		}
		src = restoreSource{found: true}
	}
	return src, nil
}

// k3sServerFlags reads the flags of the `k3s server` call in a shell command:
// "--name=value" and "--name value" give value, a lone "--name" "true".
func k3sServerFlags(cmd string) (map[string]string, error) {
	f, err := syntax.NewParser().Parse(strings.NewReader(cmd), "")
	if err != nil {
		return nil, fmt.Errorf("the restore command does not parse as shell: %w", err)
	}
	var flags map[string]string
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || flags != nil || len(call.Args) < 2 || literal(call.Args[0]) != "k3s" || literal(call.Args[1]) != "server" {
			return true
		}
		flags = map[string]string{}
		args := call.Args[2:]
		for i := 0; i < len(args); i++ {
			name, ok := strings.CutPrefix(literal(args[i]), "--")
			if !ok {
				continue
			}
			if k, v, eq := strings.Cut(name, "="); eq {
				flags[k] = v
				continue
			}
			flags[name] = "true"
			if name == "cluster-reset-restore-path" && i+1 < len(args) {
				flags[name] = literal(args[i+1])
				i++
			}
		}
		return false
	})
	if flags == nil {
		return nil, fmt.Errorf("a restore command without a k3s server call: %s", cmd)
	}
	return flags, nil
}
