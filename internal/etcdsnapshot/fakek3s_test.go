package etcdsnapshot

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capk3s/capk3s/internal/workload"
)

// fakeK3s plays a k3s server's /db/snapshot as read from k3s's source
// (pkg/etcd/snapshot_handler.go, pkg/etcd/snapshot.go): basic auth of user
// "server" with the token's passphrase; a save writes the snapshot
// "<name>-<node>-<unix time>" and records it in an ETCDSnapshotFile (and a second
// one for the S3 copy when the request carries s3), then answers with the names.
// The snapshot's folder and compression are the request's dir and compress alone
// (withRequest copies no etcd-snapshot-dir of the server's). Before any snapshot,
// k3s builds the request's S3 client from the request's block as sent
// (pkg/etcd/s3/s3.go GetClient, minio.New): an empty endpoint is refused by minio,
// and handleSave answers 400 "failed to initialize S3 client: ...".
type fakeK3s struct {
	t        *testing.T
	password string
	node     string
	// mode: "" saves; "s3fail" saves but fails the upload; "500" answers k3s's internal error; "hang" records the
	// snapshot and never answers (the manager's request is lost); "silent" never
	// answers and records nothing.
	mode    string
	mu      sync.Mutex
	posts   int
	lastReq map[string]any
	release chan struct{}
	srv     *httptest.Server
}

func startFakeK3s(t *testing.T, password string) *fakeK3s {
	t.Helper()
	f := &fakeK3s{t: t, password: password, node: "server-0", release: make(chan struct{})}
	f.srv = httptest.NewTLSServer(f)
	t.Cleanup(func() { close(f.release); f.srv.Close() })
	return f
}

func (f *fakeK3s) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
}

func (f *fakeK3s) hostPort() (string, int32) {
	host, port, _ := strings.Cut(strings.TrimPrefix(f.srv.URL, "https://"), ":")
	p, _ := strconv.Atoi(port)
	return host, int32(p)
}

func (f *fakeK3s) postCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.posts
}

func (f *fakeK3s) request() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastReq
}

func (f *fakeK3s) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	if !ok || user != "server" || pass != f.password {
		writeStatus(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	if r.URL.Path != "/db/snapshot" || r.Method != http.MethodPost {
		writeStatus(w, http.StatusNotFound, "not found")
		return
	}
	body, _ := io.ReadAll(r.Body)
	req := map[string]any{}
	_ = json.Unmarshal(body, &req)
	f.mu.Lock()
	f.posts++
	f.lastReq = req
	mode := f.mode
	f.mu.Unlock()
	switch mode {
	case "500":
		writeStatus(w, http.StatusInternalServerError, "Internal error occurred: etcd-snapshot error ID 04242")
		return
	case "silent":
		<-f.release
		return
	}
	if s3, ok := req["s3"].(map[string]any); ok {
		if ep, _ := s3["endpoint"].(string); ep == "" {
			writeStatus(w, http.StatusBadRequest, "failed to initialize S3 client: Endpoint:  does not follow ip address or domain name standards.")
			return
		}
	}
	prefix := "etcd-snapshot"
	if names, _ := req["name"].([]any); len(names) > 0 {
		prefix, _ = names[0].(string)
	}
	name := fmt.Sprintf("%s-%s-%d", prefix, f.node, time.Now().Unix())
	if compress, _ := req["compress"].(bool); compress {
		name += ".zip"
	}
	dir := "/var/lib/rancher/k3s/server/db/snapshots"
	if d, ok := req["dir"].(string); ok {
		dir = d
	}
	created := []string{name}
	f.record(name, f.node, "file://"+dir+"/"+name, nil)
	if s3, ok := req["s3"].(map[string]any); ok {
		if mode == "s3fail" {
			// k3s records the failed upload and answers with the local copy only.
			f.failedRecord(name, s3, "The specified bucket does not exist")
		} else {
			f.record(name, "s3", fmt.Sprintf("s3://%s/%s", s3["bucket"], name), s3)
			created = append(created, name)
		}
	}
	if mode == "hang" {
		<-f.release
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"created": created})
}

// record writes an ETCDSnapshotFile as k3s does (cluster-scoped, status by the
// status subresource).
func (f *fakeK3s) record(name, node, location string, s3 map[string]any) {
	ctx := context.Background()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(workload.ETCDSnapshotFileKind)
	suffix := "local"
	if s3 != nil {
		suffix = "s3"
	}
	u.SetName(name + "-" + suffix)
	spec := map[string]any{"snapshotName": name, "nodeName": node, "location": location}
	if s3 != nil {
		spec["s3"] = map[string]any{"bucket": s3["bucket"]}
	}
	u.Object["spec"] = spec
	if err := env.Client.Create(ctx, u); err != nil {
		f.t.Errorf("recording snapshot %s: %v", name, err)
		return
	}
	u.Object["status"] = map[string]any{"creationTime": time.Now().UTC().Format(time.RFC3339), "readyToUse": true, "size": "4096"}
	if err := env.Client.Status().Update(ctx, u); err != nil {
		f.t.Errorf("recording the status of snapshot %s: %v", name, err)
	}
}

func writeStatus(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Message: msg})
}

// failedRecord writes the record of a failed S3 upload as k3s does: readyToUse
// false and the error's message.
func (f *fakeK3s) failedRecord(name string, s3 map[string]any, msg string) {
	ctx := context.Background()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(workload.ETCDSnapshotFileKind)
	u.SetName(name + "-s3")
	u.Object["spec"] = map[string]any{"snapshotName": name, "nodeName": "s3", "s3": map[string]any{"bucket": s3["bucket"]}}
	if err := env.Client.Create(ctx, u); err != nil {
		f.t.Errorf("recording failed snapshot %s: %v", name, err)
		return
	}
	now := time.Now().UTC().Format(time.RFC3339)
	u.Object["status"] = map[string]any{"creationTime": now, "readyToUse": false, "error": map[string]any{"time": now, "message": msg}}
	if err := env.Client.Status().Update(ctx, u); err != nil {
		f.t.Errorf("recording the status of failed snapshot %s: %v", name, err)
	}
}
