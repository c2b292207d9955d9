package supervisor

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeK3s plays k3s's /db/snapshot as pkg/etcd/snapshot_handler.go and
// pkg/util/apierrors.go do: basic auth of user "server", POST only, JSON
// SnapshotRequest in, SnapshotResult or metav1.Status out.
type fakeK3s struct {
	password string
	calls    atomic.Int32
	got      map[string]any
	answer   func(w http.ResponseWriter)
}

func (f *fakeK3s) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	user, pass, ok := r.BasicAuth()
	if !ok || user != "server" || pass != f.password {
		writeStatus(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	if r.URL.Path != SnapshotPath || r.Method != http.MethodPost {
		writeStatus(w, http.StatusMethodNotAllowed, "not allowed")
		return
	}
	b, _ := io.ReadAll(r.Body)
	f.got = map[string]any{}
	_ = json.Unmarshal(b, &f.got)
	f.answer(w)
}

func writeStatus(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Message: msg})
}

func start(t *testing.T, f *fakeK3s) *Client {
	t.Helper()
	srv := httptest.NewTLSServer(f)
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return &Client{Endpoint: strings.TrimPrefix(srv.URL, "https://"), CACert: ca, Password: f.password}
}

func TestSaveSendsK3sRequestAndReadsCreated(t *testing.T) {
	f := &fakeK3s{password: "p4ss", answer: func(w http.ResponseWriter) {
		_, _ = w.Write([]byte(`{"created":["on-demand-x-server-0-1700000000","on-demand-x-server-0-1700000000"]}`))
	}}
	c := start(t, f)
	res, err := c.Save(context.Background(), SaveRequest{Name: "on-demand-x", S3: &S3{Bucket: "b", AccessKey: "ak", SecretKey: "sk", Folder: "f"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Created) != 2 || res.Created[0] != "on-demand-x-server-0-1700000000" {
		t.Fatalf("created = %v", res.Created)
	}
	if f.got["operation"] != "save" || f.got["retention"] != float64(0) {
		t.Fatalf("request = %v", f.got)
	}
	if names, _ := f.got["name"].([]any); len(names) != 1 || names[0] != "on-demand-x" {
		t.Fatalf("name = %v", f.got["name"])
	}
	s3, _ := f.got["s3"].(map[string]any)
	if s3["bucket"] != "b" || s3["accessKey"] != "ak" || s3["secretKey"] != "sk" || s3["folder"] != "f" {
		t.Fatalf("s3 = %v", s3)
	}
}

func TestSaveWithoutS3SendsNoS3Block(t *testing.T) {
	f := &fakeK3s{password: "p", answer: func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{}`)) }}
	c := start(t, f)
	res, err := c.Save(context.Background(), SaveRequest{Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.got["s3"]; ok {
		t.Fatalf("request carries s3: %v", f.got)
	}
	if len(res.Created) != 0 {
		t.Fatalf("created = %v", res.Created)
	}
}

func TestSaveReportsK3sErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		password string
		answer   func(w http.ResponseWriter)
		code     int
		message  string
	}{
		{name: "wrong token", password: "wrong", code: 401, message: "Unauthorized"},
		{name: "forbidden", password: "p", answer: func(w http.ResponseWriter) { writeStatus(w, 403, "forbidden: user is not a server") }, code: 403, message: "forbidden: user is not a server"},
		{name: "internal error with ID", password: "p", answer: func(w http.ResponseWriter) {
			writeStatus(w, 500, "Internal error occurred: etcd-snapshot error ID 01234")
		}, code: 500, message: "etcd-snapshot error ID 01234"},
		{name: "not a Status", password: "p", answer: func(w http.ResponseWriter) { w.WriteHeader(502); _, _ = w.Write([]byte("bad gateway\n")) }, code: 502, message: "bad gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeK3s{password: "p", answer: tc.answer}
			c := start(t, f)
			c.Password = tc.password
			_, err := c.Save(context.Background(), SaveRequest{Name: "n"})
			var se *StatusError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a StatusError", err)
			}
			if se.Code != tc.code || !strings.Contains(se.Message, tc.message) {
				t.Fatalf("err = %v", se)
			}
			if NotSent(err) {
				t.Fatal("an answered request counts as not sent")
			}
			if strings.Contains(err.Error(), "wrong") {
				t.Fatal("the password appears in the error")
			}
		})
	}
}

func TestSaveRefusesAServerNotSignedByTheCA(t *testing.T) {
	f := &fakeK3s{password: "p", answer: func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{}`)) }}
	c := start(t, f)
	c.CACert = otherCA(t)
	_, err := c.Save(context.Background(), SaveRequest{Name: "n"})
	if err == nil || !NotSent(err) {
		t.Fatalf("err = %v, want a not-sent TLS error", err)
	}
	if f.calls.Load() != 0 {
		t.Fatal("the request reached a server the CA does not vouch for")
	}
}

func TestSaveTimeoutAfterSendingIsNotNotSent(t *testing.T) {
	release := make(chan struct{})
	f := &fakeK3s{password: "p", answer: func(w http.ResponseWriter) { <-release }}
	c := start(t, f)
	defer close(release)
	c.Timeout = 200 * time.Millisecond
	_, err := c.Save(context.Background(), SaveRequest{Name: "n"})
	if err == nil || NotSent(err) {
		t.Fatalf("err = %v, want a timeout after sending (k3s may be taking the snapshot)", err)
	}
}

func TestSaveRefusesBadInputWithoutARequest(t *testing.T) {
	f := &fakeK3s{password: "p", answer: func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{}`)) }}
	good := start(t, f)
	for name, c := range map[string]Client{
		"no endpoint": {CACert: good.CACert, Password: "p"},
		"no password": {Endpoint: good.Endpoint, CACert: good.CACert},
		"no CA":       {Endpoint: good.Endpoint, Password: "p"},
	} {
		if _, err := c.Save(context.Background(), SaveRequest{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if f.calls.Load() != 0 {
		t.Fatal("bad input reached the server")
	}
}

// otherCA is a CA that signed nothing the test server serves.
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other-ca"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
