package sim

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/envtest"
	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

const (
	drServerPass = "s3rver"
	drAgentPass  = "ag3nt"
	drBucket     = "dr-backups"
)

// firstServer renders a first server as the bootstrap provider would, with the given
// server token and, when restoreFrom is set, a restore from the simulated S3.
func firstServer(t testing.TB, serverPass, restoreFrom, folder string) *bootData {
	t.Helper()
	ca := mustCAs(t, theCAs)
	j := mustJoinTokens(t, token.Token{Server: serverPass, Agent: drAgentPass}, ca.serverCA)
	in := cloudinit.Input{Role: cloudinit.ServerInit, Version: testVersion, Token: j.server, AgentToken: j.agent,
		Certificates: ca.files, TLSSANs: []string{"127.0.0.1"}}
	in.Spec.ServerConfig.Etcd = &bootstrapv1.Etcd{RestoreFrom: restoreFrom, Snapshots: &bootstrapv1.EtcdSnapshots{
		Schedule: "0 */6 * * *", S3: &bootstrapv1.EtcdSnapshotsS3{Bucket: drBucket, Folder: folder}}}
	b, _ := parseRendered(t, mustRender(t, in))
	return b
}

// startDRCluster starts a workload cluster from b's first server, cp-0, as the
// SimMachine controller would, and makes the server an up etcd member.
func startDRCluster(t testing.TB, b *bootData) *workloadCluster {
	const machine = "cp-0"
	t.Helper()
	port, err := envtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "dr", Name: machine}
	wc := &workloadCluster{key: key, port: port, dir: t.TempDir(), onChange: func(client.ObjectKey) {}, release: func() {}}
	t.Cleanup(func() {
		if err := wc.stop(); err != nil {
			t.Error(err)
		}
	})
	bootServer(t, wc, b, machine)
	return wc
}

// bootServer boots a first server on wc: its restore, the cluster, its etcd member.
func bootServer(t testing.TB, wc *workloadCluster, b *bootData, machine string) {
	t.Helper()
	restore, err := b.checkRestore()
	if err != nil {
		t.Fatal(err)
	}
	if err := wc.initialize(context.Background(), machine, b, restore); err != nil {
		t.Fatal(err)
	}
	if _, err := wc.addMember(machine); err != nil {
		t.Fatal(err)
	}
	wc.serverSnapshotSettings(machine, b.snapshotSettings())
}

// endpointConfig is the admin client config with the endpoint as its host: what the
// control plane's kubeconfig reaches.
func endpointConfig(wc *workloadCluster) *rest.Config {
	cfg := rest.CopyConfig(wc.config)
	cfg.Host = wc.endpoint()
	return cfg
}

func endpointClient(t *testing.T, wc *workloadCluster) client.Client {
	t.Helper()
	cl, err := client.New(endpointConfig(wc), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// postSnapshot POSTs a snapshot request to the endpoint, as `k3s etcd-snapshot` does.
func postSnapshot(t *testing.T, wc *workloadCluster, req any, auth func(*http.Request), cert *tls.Certificate) (int, []byte) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(wc.config.CAData)
	tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: time.Minute}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.NewRequestWithContext(context.Background(), http.MethodPost, wc.endpoint()+k3smodel.SnapshotPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != nil {
		auth(r)
	}
	resp, err := hc.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out bytes.Buffer
	if _, err := out.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out.Bytes()
}

func basic(user, pass string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(user, pass) }
}

func marker(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
}

// TestEndpointServesTheSupervisorAndTheAPI: the endpoint answers k3s's snapshot API
// with k3s's authorization, and hands everything else to the apiserver with the
// caller's identity: a client certificate's user and groups, a bearer token's.
func TestEndpointServesTheSupervisorAndTheAPI(t *testing.T) {
	t.Parallel()
	wc := startDRCluster(t, firstServer(t, drServerPass, "", "auth"))
	ctx := context.Background()

	cs, err := kubernetes.NewForConfig(endpointConfig(wc))
	if err != nil {
		t.Fatal(err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != "capk3s-test-admin" || !strings.Contains(strings.Join(u.Groups, ","), "system:masters") {
		t.Errorf("the endpoint passed the client certificate as %+v", u)
	}
	// No controller-manager runs to make the default ServiceAccount.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "probe"}}
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "probe", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bearer := rest.AnonymousClientConfig(endpointConfig(wc))
	bearer.BearerToken = tok.Status.Token
	bcs, err := kubernetes.NewForConfig(bearer)
	if err != nil {
		t.Fatal(err)
	}
	review, err = bcs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo.Username; u != "system:serviceaccount:default:probe" {
		t.Errorf("the endpoint passed the bearer token as %q", u)
	}
	// A forged identity header counts for nothing.
	forged := rest.AnonymousClientConfig(endpointConfig(wc))
	forged.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			r.Header.Set(remoteUserHeader, "admin")
			r.Header.Set(remoteGroupHeader, "system:masters")
			return rt.RoundTrip(r)
		})
	}
	fcs, err := kubernetes.NewForConfig(forged)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fcs.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a forged X-Remote-User listed Secrets: %v", err)
	}

	otherCA, err := envtest.NewClientCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, _, stranger, err := otherCA.Issue("stranger")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := tls.X509KeyPair(wc.config.CertData, wc.config.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	list := map[string]string{"operation": "list"}
	for _, tc := range []struct {
		name string
		auth func(*http.Request)
		cert *tls.Certificate
		want int
	}{
		{name: "the server token's password", auth: basic("server", drServerPass), want: http.StatusOK},
		{name: "a wrong password", auth: basic("server", "wrong"), want: http.StatusUnauthorized},
		{name: "the agent token's password", auth: basic("node", drAgentPass), want: http.StatusForbidden},
		{name: "no credentials", want: http.StatusForbidden},
		{name: "the admin's client certificate", cert: &admin, want: http.StatusForbidden},
		{name: "a certificate of another CA", cert: &stranger, want: http.StatusUnauthorized},
	} {
		code, body := postSnapshot(t, wc, list, tc.auth, tc.cert)
		if code != tc.want {
			t.Errorf("%s: POST %s = %d %s, want %d", tc.name, k3smodel.SnapshotPath, code, body, tc.want)
		}
	}
	if code, body := postSnapshot(t, wc, map[string]string{"operation": "rotate"}, basic("server", drServerPass), nil); code != http.StatusBadRequest {
		t.Errorf("an unknown operation = %d %s, want 400", code, body)
	}
}

// TestSnapshotAndRestoreOfARunningCluster: an on-demand save through the endpoint
// holds the objects of that moment; with every server gone, a new first server that
// restores it brings the API back on the same endpoint with exactly those objects
// and one etcd member; a restore with another token fails as k3s fails.
func TestSnapshotAndRestoreOfARunningCluster(t *testing.T) {
	t.Parallel()
	const folder = "running"
	wc := startDRCluster(t, firstServer(t, drServerPass, "", folder))
	ctx := context.Background()
	cl := endpointClient(t, wc)
	if err := cl.Create(ctx, marker("before")); err != nil {
		t.Fatal(err)
	}

	req := k3smodel.SnapshotRequest{Operation: k3smodel.SnapshotSave, Name: []string{k3smodel.OnDemandSnapshotName},
		Retention: ptr.To(0), S3: &k3smodel.EtcdS3{Bucket: drBucket, Folder: folder, Endpoint: "minio.example.com:9000"}}
	// Without a timeout and keys k3s cannot make the S3 client, and takes nothing.
	code, body := postSnapshot(t, wc, req, basic("server", drServerPass), nil)
	if code != http.StatusBadRequest || !strings.Contains(string(body), "failed to initialize S3 client") {
		t.Fatalf("save without S3 timeout = %d %s, want 400", code, body)
	}
	req.S3.Timeout = metav1.Duration{Duration: 5 * time.Minute}
	code, body = postSnapshot(t, wc, req, basic("server", drServerPass), nil)
	if code != http.StatusBadRequest || !strings.Contains(string(body), "Access Denied") {
		t.Fatalf("save without S3 keys = %d %s, want 400", code, body)
	}
	if keys := S3Objects("minio.example.com:9000", drBucket, folder+"/"); len(keys) != 0 {
		t.Fatalf("failed saves uploaded %v", keys)
	}
	req.S3.AccessKey, req.S3.SecretKey = "AKIAEXAMPLE", "s3cr3t"
	code, body = postSnapshot(t, wc, req, basic("server", drServerPass), nil)
	if code != http.StatusOK {
		t.Fatalf("save = %d %s", code, body)
	}
	var res k3smodel.SnapshotResult
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Created) != 2 || res.Created[0] != res.Created[1] || !strings.HasPrefix(res.Created[0], "on-demand-cp-0-") {
		t.Fatalf("save created %v, want the local file and its S3 copy, named on-demand-cp-0-<time>", res.Created)
	}
	name := res.Created[0]
	if keys := S3Objects("minio.example.com:9000", drBucket, folder+"/"); len(keys) != 1 || keys[0] != folder+"/"+name {
		t.Errorf("the bucket holds %v, want %s/%s", keys, folder, name)
	}
	// "list" with the same S3 block answers the object as k3s reads it from S3: at
	// s3://<bucket>/<folder>/<name>, ready, with this cluster's token hash; without
	// keys k3s cannot make the S3 client and answers 400.
	listReq := k3smodel.SnapshotRequest{Operation: k3smodel.SnapshotList, S3: req.S3}
	code, body = postSnapshot(t, wc, listReq, basic("server", drServerPass), nil)
	var listed struct {
		Items []struct {
			Metadata struct{ Annotations map[string]string }
			Spec     struct{ SnapshotName, Location string }
			Status   struct{ ReadyToUse bool }
		}
	}
	if err := json.Unmarshal(body, &listed); code != http.StatusOK || err != nil {
		t.Fatalf("list = %d %s (%v)", code, body, err)
	}
	found := false
	for _, it := range listed.Items {
		if it.Spec.Location == "s3://"+drBucket+"/"+folder+"/"+name {
			found = it.Status.ReadyToUse && it.Spec.SnapshotName == name &&
				it.Metadata.Annotations[k3smodel.SnapshotTokenHashAnnotation] == k3smodel.TokenHash(drServerPass)
		}
	}
	if !found {
		t.Errorf("list answered %s, want %s in S3, ready, with the token's hash", body, name)
	}
	noKeys := *req.S3
	noKeys.AccessKey, noKeys.SecretKey = "", ""
	if code, body := postSnapshot(t, wc, k3smodel.SnapshotRequest{Operation: k3smodel.SnapshotList, S3: &noKeys}, basic("server", drServerPass), nil); code != http.StatusBadRequest || !strings.Contains(string(body), "failed to initialize S3 client") {
		t.Errorf("list without keys = %d %s, want 400", code, body)
	}
	records := &unstructured.UnstructuredList{}
	records.SetGroupVersionKind(k3smodel.ETCDSnapshotFileKind.GroupVersion().WithKind("ETCDSnapshotFileList"))
	if err := cl.List(ctx, records); err != nil {
		t.Fatal(err)
	}
	locations := map[string]bool{}
	for _, r := range records.Items {
		if snap, _, _ := unstructured.NestedString(r.Object, "spec", "snapshotName"); snap != name {
			continue
		}
		loc, _, _ := unstructured.NestedString(r.Object, "spec", "location")
		node, _, _ := unstructured.NestedString(r.Object, "spec", "nodeName")
		size, _, _ := unstructured.NestedString(r.Object, "status", "size")
		ready, _, _ := unstructured.NestedBool(r.Object, "status", "readyToUse")
		if node != "cp-0" || size == "" || size == "0" || !ready {
			t.Errorf("record %s: node %q, size %q, readyToUse %v", r.GetName(), node, size, ready)
		}
		locations[loc] = true
	}
	if !locations["file:///var/lib/rancher/k3s/server/db/snapshots/"+name] || !locations["s3://"+drBucket+"/"+folder+"/"+name] {
		t.Errorf("records' locations = %v", locations)
	}

	if err := cl.Create(ctx, marker("after")); err != nil {
		t.Fatal(err)
	}
	// The product removes every server: the API goes down, the endpoint with it.
	if err := wc.serverGone("cp-0"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := wc.ready(); !errors.Is(err, errQuorumLost) {
		t.Fatalf("with every server gone the API answers: %v", err)
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(marker("before")), marker("before")); err == nil {
		t.Fatal("the endpoint still answers with every server gone")
	}

	// The wrong token: k3s cannot decrypt the snapshot's bootstrap data.
	wrong := firstServer(t, "another", name, folder)
	wrong.k3sConfig["etcd-s3-endpoint"] = "minio.example.com:9000"
	restore, err := wrong.checkRestore()
	if err != nil {
		t.Fatal(err)
	}
	if err := wc.initialize(ctx, "cp-wrong", wrong, restore); !errors.Is(err, k3smodel.ErrTokenMismatch) {
		t.Fatalf("restore with another token = %v, want %v", err, k3smodel.ErrTokenMismatch)
	}

	b := firstServer(t, drServerPass, name, folder)
	b.k3sConfig["etcd-s3-endpoint"] = "minio.example.com:9000"
	bootServer(t, wc, b, "cp-new")
	cl = endpointClient(t, wc)
	if err := cl.Get(ctx, client.ObjectKeyFromObject(marker("before")), marker("before")); err != nil {
		t.Errorf("the marker written before the snapshot: %v", err)
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(marker("after")), marker("after")); !apierrors.IsNotFound(err) {
		t.Errorf("the marker written after the snapshot: %v, want NotFound", err)
	}
	if wc.restores != 1 {
		t.Errorf("restores = %d, want 1", wc.restores)
	}
	if m := wc.memberNames(); len(m) != 1 || !strings.HasPrefix(m[0], "cp-new-") {
		t.Errorf("etcd members after the restore = %v, want cp-new's alone", m)
	}
}

// TestRestoreRefusedWhileAnOldServerRuns: cluster-reset beside a server that still
// runs the old etcd would put two clusters behind one endpoint.
func TestRestoreRefusedWhileAnOldServerRuns(t *testing.T) {
	t.Parallel()
	const folder = "refused"
	PutS3Object(defaultS3Endpoint, drBucket, folder+"/old")
	wc := startDRCluster(t, firstServer(t, drServerPass, "", folder))
	for _, n := range []string{"cp-1", "cp-2"} {
		if _, err := wc.addMember(n); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"cp-0", "cp-1"} {
		if err := wc.serverGone(n); err != nil {
			t.Fatal(err)
		}
	}
	b := firstServer(t, drServerPass, "old", folder)
	restore, err := b.checkRestore()
	if err != nil {
		t.Fatal(err)
	}
	err = wc.initialize(context.Background(), "cp-new", b, restore)
	if err == nil || !strings.Contains(err.Error(), "cp-2") || !strings.Contains(err.Error(), "second cluster") {
		t.Fatalf("restore beside a running old server = %v, want a refusal naming cp-2", err)
	}
}

// TestScheduledSnapshotHoldsTheCluster: a scheduled snapshot holds the objects of its
// moment, in S3 and on the server's disk; the disk's copy goes with the machine.
func TestScheduledSnapshotHoldsTheCluster(t *testing.T) {
	t.Parallel()
	const folder = "scheduled"
	b := firstServer(t, drServerPass, "", folder)
	wc := startDRCluster(t, b)
	ctx := context.Background()
	if err := wc.client.Create(ctx, marker("scheduled-before")); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1700000000, 0)
	if err := b.snapshotPlan().take(ctx, wc, wc.client, "cp-0", now); err != nil {
		t.Fatal(err)
	}
	name := k3smodel.SnapshotName(k3smodel.DefaultSnapshotName, "cp-0", now.Unix(), false)
	data, ok := s3Snapshot(defaultS3Endpoint, drBucket, folder+"/"+name)
	if !ok || data == nil {
		t.Fatalf("S3 holds no snapshot %s/%s", folder, name)
	}
	held := false
	for _, kv := range data.kvs {
		held = held || string(kv.key) == "/registry/configmaps/default/scheduled-before"
	}
	if !held {
		t.Error("the scheduled snapshot does not hold the ConfigMap created before it")
	}
	p := &Provider{clusters: map[client.ObjectKey]*workloadCluster{wc.key: wc}}
	want := "/var/lib/rancher/k3s/server/db/snapshots/" + name
	if got := p.LocalSnapshots(wc.key, "cp-0"); len(got) != 1 || got[0] != want {
		t.Errorf("LocalSnapshots = %v, want [%s]", got, want)
	}
	if err := wc.serverGone("cp-0"); err != nil {
		t.Fatal(err)
	}
	if got := p.LocalSnapshots(wc.key, "cp-0"); len(got) != 0 {
		t.Errorf("after the machine is gone its disk still holds %v", got)
	}
}
