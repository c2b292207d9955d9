package sim

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// k3sEnvPath is the environment file k3s's systemd unit reads, where S3
// credentials belong instead of config.yaml.
const k3sEnvPath = "/etc/default/k3s"

// checkEtcd checks a server's etcd snapshot and restore settings as k3s would
// need them: S3 credentials never inline in config.yaml but in the environment
// file (both keys), a CA file that is in the data when one is named, and a
// restore only on the server that initializes the cluster.
func (b *bootData) checkEtcd() error {
	for _, key := range []string{"etcd-s3-access-key", "etcd-s3-secret-key"} {
		if _, inline := b.k3sConfig[key]; inline {
			return fmt.Errorf("%s holds %s: S3 credentials must not be written into config.yaml", k3sConfigPath, key)
		}
	}
	if env, ok := b.files[k3sEnvPath]; ok {
		vars := envVars(string(env))
		if (vars["AWS_ACCESS_KEY_ID"] == "") != (vars["AWS_SECRET_ACCESS_KEY"] == "") {
			return fmt.Errorf("%s has only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", k3sEnvPath)
		}
	}
	if ca := b.str("etcd-s3-endpoint-ca"); ca != "" {
		if _, ok := b.files[ca]; !ok {
			return fmt.Errorf("etcd-s3-endpoint-ca names %s, which the data does not write", ca)
		}
	}
	restores := slices.ContainsFunc(b.commands, func(c string) bool { return strings.Contains(c, "--cluster-reset-restore-path") })
	if restores && !b.clusterInit() {
		return errors.New("a joining server restores an etcd snapshot: only the first server of a cluster may (cluster-reset would split it)")
	}
	return nil
}

// envVars reads KEY='value' lines as sh and systemd do for the values capk3s writes.
func envVars(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		out[k] = strings.Trim(v, "'")
	}
	return out
}

// snapshotPlan is what a server's config.yaml says about its scheduled snapshots.
type snapshotPlan struct {
	dir                      string
	compress                 bool
	s3                       bool
	bucket, folder, endpoint string
}

// snapshotPlan is nil when the server has no snapshot schedule.
func (b *bootData) snapshotPlan() *snapshotPlan {
	if b.str("etcd-snapshot-schedule-cron") == "" {
		return nil
	}
	p := &snapshotPlan{dir: b.str("etcd-snapshot-dir"), bucket: b.str("etcd-s3-bucket"), folder: b.str("etcd-s3-folder"), endpoint: b.str("etcd-s3-endpoint")}
	if p.dir == "" {
		p.dir = "/var/lib/rancher/k3s/server/db/snapshots"
	}
	if p.endpoint == "" {
		p.endpoint = "s3.amazonaws.com" // k3s's default etcd-s3-endpoint
	}
	p.s3, _ = b.k3sConfig["etcd-s3"].(bool)
	p.compress, _ = b.k3sConfig["etcd-snapshot-compress"].(bool)
	return p
}

// take records an etcd snapshot of node as k3s does after a scheduled snapshot
// (k3smodel's records): an ETCDSnapshotFile for the file on the server's disk and,
// with etcd-s3, one for the copy it uploads, which also lands in the simulated S3.
// The simulator does not run cron: a server with a schedule takes one snapshot when
// it joins, and then one every Provider.SnapshotInterval.
func (p *snapshotPlan) take(ctx context.Context, cl client.Client, node string, now time.Time) error {
	name := k3smodel.SnapshotName(node, now.Unix(), p.compress)
	records := []k3smodel.SnapshotRecord{k3smodel.LocalSnapshotRecord(node, p.dir, name)}
	if p.s3 {
		records = append(records, k3smodel.S3SnapshotRecord(node, p.bucket, p.folder, name))
		PutS3Object(p.endpoint, p.bucket, path.Join(p.folder, name))
	}
	for _, r := range records {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(k3smodel.ETCDSnapshotFileKind)
		u.SetName(r.Name)
		u.SetLabels(map[string]string{k3smodel.SnapshotStorageNodeLabel: r.StorageNode})
		spec := map[string]any{"snapshotName": name, "nodeName": r.NodeName, "location": r.Location}
		if r.StorageNode == "s3" {
			spec["s3"] = map[string]any{"bucket": p.bucket, "endpoint": p.endpoint, "prefix": p.folder}
		}
		u.Object["spec"] = spec
		if err := cl.Create(ctx, u); err != nil {
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return fmt.Errorf("recording etcd snapshot %s: %w", name, err)
		}
		u.Object["status"] = map[string]any{"creationTime": now.UTC().Format(time.RFC3339), "readyToUse": true, "size": "4096"}
		if err := cl.Status().Update(ctx, u); err != nil {
			return fmt.Errorf("recording etcd snapshot %s: %w", name, err)
		}
	}
	return nil
}

// snapshotted notes node's plan and when it last took a snapshot.
func (c *workloadCluster) snapshotted(node string, p *snapshotPlan, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snapshots == nil {
		c.snapshots = map[string]*snapshotState{}
	}
	c.snapshots[node] = &snapshotState{plan: p, last: at}
}

type snapshotState struct {
	plan *snapshotPlan
	last time.Time
}

// nextSnapshot takes node's next periodic snapshot once every is over since the
// last, and says how long until the one after. Zero every, or a server without a
// schedule: nothing, and no wake-up.
func (c *workloadCluster) nextSnapshot(ctx context.Context, node string, every time.Duration, now time.Time) (time.Duration, error) {
	c.mu.Lock()
	st := c.snapshots[node]
	cl := c.client
	c.mu.Unlock()
	if every <= 0 || st == nil || cl == nil {
		return 0, nil
	}
	if wait := st.last.Add(every).Sub(now); wait > 0 {
		return wait, nil
	}
	if err := st.plan.take(ctx, cl, node, now); err != nil {
		return 0, err
	}
	c.snapshotted(node, st.plan, now)
	return every, nil
}
