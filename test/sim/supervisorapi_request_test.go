package sim

import (
	"encoding/json"
	"net/http"
	"path"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// TestOnDemandSaveTakesTheRequestsFolderAndEndpoint: k3s takes an on-demand save's
// folder from the request's dir alone, and its S3 settings as sent: on a server
// whose config.yaml names its own snapshot folder and no S3 endpoint (k3s's flag
// default then), a save without dir lands in k3s's default folder, a save with dir
// in that one, and a save whose S3 block has no endpoint is refused as k3s refuses
// it, with nothing taken.
func TestOnDemandSaveTakesTheRequestsFolderAndEndpoint(t *testing.T) {
	t.Parallel()
	const (
		folder = "request-folder"
		dir    = "/srv/etcd-snapshots"
	)
	ca := mustCAs(t, theCAs)
	j := mustJoinTokens(t, token.Token{Server: drServerPass, Agent: drAgentPass}, ca.serverCA)
	in := cloudinit.Input{Role: cloudinit.ServerInit, Version: testVersion, Token: j.server, AgentToken: j.agent,
		Certificates: ca.files, TLSSANs: []string{"127.0.0.1"}}
	in.Spec.ServerConfig.Etcd = &bootstrapv1.Etcd{Snapshots: &bootstrapv1.EtcdSnapshots{
		Schedule: "0 */6 * * *", Directory: dir, S3: &bootstrapv1.EtcdSnapshotsS3{Bucket: drBucket, Folder: folder}}}
	b, _ := parseRendered(t, mustRender(t, in))
	if got := b.str("etcd-snapshot-dir"); got != dir {
		t.Fatalf("the server's etcd-snapshot-dir = %q, want %q", got, dir)
	}
	wc := startDRCluster(t, b)

	save := func(req k3smodel.SnapshotRequest) (int, []byte) {
		return postSnapshot(t, wc, req, basic("server", drServerPass), nil)
	}
	saved := func(code int, body []byte) string {
		t.Helper()
		var res k3smodel.SnapshotResult
		if code != http.StatusOK || json.Unmarshal(body, &res) != nil || len(res.Created) == 0 {
			t.Fatalf("save = %d %s", code, body)
		}
		return res.Created[0]
	}
	onDisk := func(p string) bool {
		wc.mu.Lock()
		defer wc.mu.Unlock()
		_, ok := wc.localSnapshots["cp-0"][p]
		return ok
	}

	bare := saved(save(k3smodel.SnapshotRequest{Operation: k3smodel.SnapshotSave, Name: []string{"bare"}, Retention: ptr.To(0)}))
	if p := path.Join(k3smodel.DefaultSnapshotDir, bare); !onDisk(p) {
		t.Errorf("a save without dir is not at %s (the server's own folder is not the request's)", p)
	}
	if onDisk(path.Join(dir, bare)) {
		t.Errorf("a save without dir landed in the server's etcd-snapshot-dir %s", dir)
	}
	// Distinct seconds: k3s names snapshots by the second.
	time.Sleep(time.Second)
	withDir := saved(save(k3smodel.SnapshotRequest{Operation: k3smodel.SnapshotSave, Name: []string{"with-dir"}, Dir: ptr.To(dir), Retention: ptr.To(0)}))
	if p := path.Join(dir, withDir); !onDisk(p) {
		t.Errorf("a save with dir %s is not at %s", dir, p)
	}

	s3 := &k3smodel.EtcdS3{Bucket: drBucket, Folder: folder, AccessKey: "AKIAEXAMPLE", SecretKey: "s3cr3t", Timeout: metav1.Duration{Duration: 5 * time.Minute}}
	code, body := save(k3smodel.SnapshotRequest{Operation: k3smodel.SnapshotSave, Name: []string{"no-endpoint"}, Retention: ptr.To(0), S3: s3})
	if code != http.StatusBadRequest || !strings.Contains(string(body), "failed to initialize S3 client: Endpoint:  does not follow ip address or domain name standards.") {
		t.Fatalf("save with an empty S3 endpoint = %d %s, want k3s's 400", code, body)
	}
	if keys := S3Objects(defaultS3Endpoint, drBucket, folder+"/"); len(keys) != 0 {
		t.Fatalf("a refused save uploaded %v", keys)
	}
	s3.Endpoint = defaultS3Endpoint
	name := saved(save(k3smodel.SnapshotRequest{Operation: k3smodel.SnapshotSave, Name: []string{"with-endpoint"}, Retention: ptr.To(0), S3: s3}))
	if keys := S3Objects(defaultS3Endpoint, drBucket, folder+"/"); len(keys) != 1 || keys[0] != folder+"/"+name {
		t.Fatalf("the bucket holds %v, want %s/%s", keys, folder, name)
	}
}
