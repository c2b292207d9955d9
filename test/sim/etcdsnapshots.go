package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
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

// snapshotPlan is what a server's config.yaml says about its etcd snapshots.
type snapshotPlan struct {
	// scheduled: etcd-snapshot-schedule-cron is set.
	scheduled                bool
	name, dir                string
	compress                 bool
	s3                       bool
	bucket, folder, endpoint string
	// folders are the folders the server has (madeFolders): a save into another
	// than k3s's default one fails without them (k3smodel.SnapshotDir).
	folders map[string]bool
}

// snapshotPlan is nil when the server has no snapshot schedule.
func (b *bootData) snapshotPlan() *snapshotPlan {
	if p := b.snapshotSettings(); p.scheduled {
		return p
	}
	return nil
}

// snapshotSettings are the server's snapshot settings, with k3s's defaults
// (pkg/cli/cmds/server.go): what its scheduled saves use, and what an on-demand
// save lays its request over (the name and compression only:
// k3smodel.SaveSettings).
func (b *bootData) snapshotSettings() *snapshotPlan {
	p := &snapshotPlan{scheduled: b.str("etcd-snapshot-schedule-cron") != "", name: b.str("etcd-snapshot-name"),
		dir: b.str("etcd-snapshot-dir"), bucket: b.str("etcd-s3-bucket"), folder: b.str("etcd-s3-folder"), endpoint: b.str("etcd-s3-endpoint")}
	if p.name == "" {
		p.name = k3smodel.DefaultSnapshotName
	}
	if p.dir == "" {
		p.dir = k3smodel.DefaultSnapshotDir
	}
	if p.endpoint == "" {
		p.endpoint = defaultS3Endpoint
	}
	p.folders = b.madeFolders()
	p.s3, _ = b.k3sConfig["etcd-s3"].(bool)
	p.compress, _ = b.k3sConfig["etcd-snapshot-compress"].(bool)
	return p
}

// defaultS3Endpoint is k3s's default etcd-s3-endpoint (pkg/cli/cmds/server.go).
const defaultS3Endpoint = "s3.amazonaws.com"

// take records a scheduled etcd snapshot of node holding data, as k3s does
// (k3smodel's records): the file on the server's disk and, with etcd-s3, the copy it
// uploads, which also lands in the simulated S3. The simulator does not run cron: a
// server with a schedule takes one snapshot when it joins, and then one every
// Provider.SnapshotInterval.
func (p *snapshotPlan) take(ctx context.Context, c *workloadCluster, cl client.Client, node string, now time.Time) error {
	var s3 *k3smodel.EtcdS3
	if p.s3 {
		s3 = &k3smodel.EtcdS3{Bucket: p.bucket, Folder: p.folder, Endpoint: p.endpoint}
	}
	_, err := c.saveSnapshot(ctx, cl, node, k3smodel.SnapshotSettings{Name: p.name, Dir: p.dir, Compress: p.compress, S3: s3}, now)
	if isSnapshotDirError(err) {
		// k3s logs it and tries again at the next scheduled time; nothing is recorded.
		return nil
	}
	return err
}

// saveSnapshot takes a snapshot of the cluster's etcd on node with the given
// settings (pkg/etcd/snapshot.go snapshot): the name is the settings' base, the
// node and the time rounded to the second; the file stays on node's disk (gone with
// the machine), a copy goes to S3 when the settings have S3, and each gets its
// ETCDSnapshotFile. It returns the names created, as k3s's SnapshotResult.
func (c *workloadCluster) saveSnapshot(ctx context.Context, cl client.Client, node string, set k3smodel.SnapshotSettings, now time.Time) ([]string, error) {
	// Before anything is saved or recorded (pkg/etcd/snapshot.go snapshot).
	if _, err := k3smodel.SnapshotDir(set.Dir, c.hasFolder(node)); err != nil {
		return nil, &snapshotDirError{err}
	}
	data, err := c.capture(ctx)
	if err != nil {
		return nil, err
	}
	now = now.Round(time.Second)
	name := k3smodel.SnapshotName(set.Name, node, now.Unix(), set.Compress)
	records := []k3smodel.SnapshotRecord{k3smodel.LocalSnapshotRecord(node, set.Dir, name)}
	c.keepLocalSnapshot(node, path.Join(set.Dir, name), data)
	created := []string{name}
	endpoint := ""
	if set.S3 != nil {
		// The settings' endpoint as it is: a scheduled save's is the server's flag,
		// defaulted by k3s's CLI; an on-demand save's is the request's, which k3s
		// never defaults and refuses empty (k3smodel.S3ClientError).
		endpoint = set.S3.Endpoint
		records = append(records, k3smodel.S3SnapshotRecord(node, set.S3.Bucket, set.S3.Folder, name))
		putS3Snapshot(endpoint, set.S3.Bucket, path.Join(set.S3.Folder, name), data)
		created = append(created, name)
	}
	for _, r := range records {
		if err := writeSnapshotRecord(ctx, cl, r, name, set.S3, endpoint, now, data.size); err != nil {
			return nil, err
		}
	}
	return created, nil
}

// hasFolder says whether a folder exists on node, from the data it booted with.
func (c *workloadCluster) hasFolder(node string) func(string) bool {
	c.mu.Lock()
	settings := c.serverSettings[node]
	c.mu.Unlock()
	return func(dir string) bool { return settings != nil && settings.folders[path.Clean(dir)] }
}

// writeSnapshotRecord writes an ETCDSnapshotFile as k3s's ToETCDSnapshotFile fills it
// (pkg/etcd/snapshot/types.go): name, node and location in spec, the S3 settings on
// the S3 copy's, and in status the time, readyToUse and the size in bytes.
func writeSnapshotRecord(ctx context.Context, cl client.Client, r k3smodel.SnapshotRecord, name string, s3 *k3smodel.EtcdS3, endpoint string, now time.Time, size int64) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k3smodel.ETCDSnapshotFileKind)
	u.SetName(r.Name)
	u.SetLabels(map[string]string{k3smodel.SnapshotStorageNodeLabel: r.StorageNode})
	spec := map[string]any{"snapshotName": name, "nodeName": r.NodeName, "location": r.Location}
	if r.StorageNode == "s3" {
		spec["s3"] = map[string]any{"bucket": s3.Bucket, "endpoint": endpoint, "prefix": s3.Folder}
	}
	u.Object["spec"] = spec
	if err := cl.Create(ctx, u); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("recording etcd snapshot %s: %w", name, err)
	}
	u.Object["status"] = map[string]any{"creationTime": now.UTC().Format(time.RFC3339), "readyToUse": true, "size": strconv.FormatInt(size, 10)}
	if err := cl.Status().Update(ctx, u); err != nil {
		return fmt.Errorf("recording etcd snapshot %s: %w", name, err)
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
	if err := st.plan.take(ctx, c, cl, node, now); err != nil {
		return 0, err
	}
	c.snapshotted(node, st.plan, now)
	return every, nil
}

// LocalSnapshots lists the snapshot files on a server's disk, by path, sorted: what
// the machine holds until it is deleted.
func (p *Provider) LocalSnapshots(cluster types.NamespacedName, node string) []string {
	c := p.cluster(cluster)
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	paths := slices.Collect(maps.Keys(c.localSnapshots[node]))
	slices.Sort(paths)
	return paths
}
