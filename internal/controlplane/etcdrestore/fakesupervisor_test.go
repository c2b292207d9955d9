package etcdrestore

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/token"
)

// fakeSupervisor plays the k3s supervisor's /db/snapshot on the Cluster's
// controlPlaneEndpoint, as read from k3s's source (v1.36.2,
// pkg/etcd/snapshot_handler.go, pkg/etcd/snapshot.go, pkg/etcd/s3/s3.go): basic
// auth of user "server" with the token's passphrase and a serving certificate of the
// cluster's server CA; with an s3 block k3s first checks the bucket with the
// request's keys (a 400 "failed to initialize S3 client" when it cannot), then "list"
// answers the objects under the folder as ETCDSnapshotFiles (location
// s3://<bucket>/<key>, the token hash from the object's metadata) and "save" uploads
// "<name>-<node>-<unix time>" with this cluster's token hash.
type fakeSupervisor struct {
	t        *testing.T
	ns       string
	password string
	mu       sync.Mutex
	// objects are S3 objects by "<bucket>/<key>", each with its token hash.
	objects map[string]string
	// denied makes k3s's bucket check fail with the request's keys.
	denied bool
	// saveFails makes a save answer 500.
	saveFails bool
	lists     int
	saves     []string
	// saveDirs are the saves' dir, in order.
	saveDirs []string
	// savedWhileDeleting notes a save taken while a server was already deleted.
	savedWhileDeleting bool
	ln                 net.Listener
}

// k3sTokenHash is k3s's pkg/util/token.go GetTokenHash.
func k3sTokenHash(passphrase string) string {
	sum := sha256.Sum256([]byte(passphrase))
	return hex.EncodeToString(sum[:])[:12]
}

// startSupervisor serves the fake on the Cluster c1's endpoint in ns.
func startSupervisor(t *testing.T, ns string) *fakeSupervisor {
	t.Helper()
	ctx := context.Background()
	cluster := &clusterv1.Cluster{}
	must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1"}, cluster))
	tok, found, err := token.Lookup(ctx, env.Client, cluster)
	if err != nil || !found {
		t.Fatalf("the token: %v %v", found, err)
	}
	ca := &corev1.Secret{}
	must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: secret.Name("c1", secret.ClusterCA)}, ca))
	cert := servingCert(t, ca.Data[secret.TLSCrtDataName], ca.Data[secret.TLSKeyDataName])
	ep := cluster.Spec.ControlPlaneEndpoint
	ln, err := tls.Listen("tcp", fmt.Sprintf("%s:%d", ep.Host, ep.Port), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	must(t, err)
	f := &fakeSupervisor{t: t, ns: ns, password: tok.Server, objects: map[string]string{}, ln: ln}
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return f
}

// put uploads an object to the control plane's bucket "backups".
func (f *fakeSupervisor) put(key, tokenHash string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects["backups/"+key] = tokenHash
}

func (f *fakeSupervisor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	if !ok || user != "server" || pass != f.password {
		status(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	if r.URL.Path != "/db/snapshot" || r.Method != http.MethodPost {
		status(w, http.StatusNotFound, "not found")
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Operation string   `json:"operation"`
		Name      []string `json:"name"`
		Dir       string   `json:"dir"`
		S3        *struct {
			Bucket, Folder, AccessKey string
		} `json:"s3"`
	}
	_ = json.Unmarshal(body, &req)
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.S3 != nil && f.denied {
		status(w, http.StatusBadRequest, "failed to initialize S3 client: failed to test for existence of bucket "+req.S3.Bucket+": Access Denied.")
		return
	}
	switch req.Operation {
	case "list":
		f.lists++
		items := []map[string]any{}
		if req.S3 != nil {
			for k, hash := range f.objects {
				key, ok := strings.CutPrefix(k, req.S3.Bucket+"/")
				if !ok || !strings.HasPrefix(key, req.S3.Folder) {
					continue
				}
				items = append(items, map[string]any{
					"metadata": map[string]any{"annotations": map[string]string{"etcd.k3s.cattle.io/snapshot-token-hash": hash}},
					"spec": map[string]any{"snapshotName": path.Base(key), "nodeName": "s3", "location": "s3://" + k,
						"s3": map[string]any{"bucket": req.S3.Bucket, "prefix": req.S3.Folder}},
					"status": map[string]any{"readyToUse": true},
				})
			}
		}
		writeJSON(w, map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	case "save":
		if f.saveFails {
			status(w, http.StatusInternalServerError, "Internal error occurred: etcd-snapshot error ID 01234")
			return
		}
		for _, m := range servers(f.t, f.ns) {
			if !m.DeletionTimestamp.IsZero() {
				f.savedWhileDeleting = true
			}
		}
		name := fmt.Sprintf("%s-c1-cp-a-%d", req.Name[0], time.Now().Unix())
		f.saves, f.saveDirs = append(f.saves, name), append(f.saveDirs, req.Dir)
		created := []string{name}
		if req.S3 != nil {
			f.objects[req.S3.Bucket+"/"+path.Join(req.S3.Folder, name)] = k3sTokenHash(f.password)
			created = append(created, name)
		}
		writeJSON(w, map[string]any{"created": created})
	default:
		status(w, http.StatusBadRequest, "etcd-snapshot error ID 00001")
	}
}

func status(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Message: msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// servingCert is a serving certificate for 127.0.0.1 signed by the PEM CA.
func servingCert(t *testing.T, caPEM, caKeyPEM []byte) tls.Certificate {
	t.Helper()
	caBlock, _ := pem.Decode(caPEM)
	caCert, err := x509.ParseCertificate(caBlock.Bytes)
	must(t, err)
	caPair, err := tls.X509KeyPair(caPEM, caKeyPEM)
	must(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "k3s"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caPair.PrivateKey)
	must(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
