package supervisor

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SnapshotPath is where k3s's supervisor serves the etcd snapshot API.
const SnapshotPath = "/db/snapshot"

// DefaultTimeout bounds one save: k3s's own CLI waits two minutes, plus the S3
// timeout when it uploads (k3s's default S3 timeout is five minutes).
const DefaultTimeout = 7 * time.Minute

// connectTimeout bounds the TCP connect and, apart, the TLS handshake: a supervisor
// that is down or blackholed is known as such in seconds, not at DefaultTimeout,
// and its request counts as not sent.
const connectTimeout = 10 * time.Second

// serverUser is the user k3s's supervisor knows servers by (role k3s:server,
// which /db/snapshot requires).
const serverUser = "server"

// maxBody bounds what is read of an answer: a SnapshotResult or a Status is small.
const maxBody = 1 << 20

// Client reaches one cluster's supervisor.
type Client struct {
	// Endpoint is the control plane endpoint, host:port.
	Endpoint string
	// CACert is the PEM server CA that signs the supervisor's serving certificate.
	CACert []byte
	// Password is the server passphrase of the join token.
	Password string
	// Timeout bounds one request; zero means DefaultTimeout.
	Timeout time.Duration
}

// SaveRequest is one on-demand snapshot.
type SaveRequest struct {
	// Name is k3s's snapshot name prefix.
	Name string
	// Dir is the folder on the server for the snapshot file; empty is k3s's default
	// folder. k3s takes it from the request alone, never from the server's own
	// etcd-snapshot-dir (pkg/etcd/snapshot_handler.go withRequest).
	Dir string
	// Compress zips the snapshot; false leaves the server's own setting.
	Compress bool
	// S3 uploads the snapshot too; nil keeps it on the server's disk only.
	S3 *S3
}

// S3 is k3s's EtcdS3 as the request carries it (pkg/daemons/config/types.go).
type S3 struct {
	AccessKey     string `json:"accessKey,omitempty"`
	Bucket        string `json:"bucket,omitempty"`
	Endpoint      string `json:"endpoint,omitempty"`
	EndpointCA    string `json:"endpointCA,omitempty"`
	Folder        string `json:"folder,omitempty"`
	Region        string `json:"region,omitempty"`
	SecretKey     string `json:"secretKey,omitempty"`
	Insecure      bool   `json:"insecure,omitempty"`
	SkipSSLVerify bool   `json:"skipSSLVerify,omitempty"`
	Retention     int    `json:"retention,omitempty"`
	// Timeout bounds each of k3s's S3 calls, the bucket check first. k3s uses the
	// request's value as it is (pkg/etcd/snapshot_handler.go withRequest, pkg/etcd/s3/s3.go
	// GetClient; v1.34.9, v1.35.4, v1.36.2): zero fails the save at once with "failed to
	// test for existence of bucket ...: context deadline exceeded".
	Timeout metav1.Duration `json:"timeout"`
}

// snapshotRequest is k3s's SnapshotRequest.
type snapshotRequest struct {
	Operation string   `json:"operation"`
	Name      []string `json:"name,omitempty"`
	Dir       *string  `json:"dir,omitempty"`
	Compress  *bool    `json:"compress,omitempty"`
	Retention *int     `json:"retention,omitempty"`
	S3        *S3      `json:"s3,omitempty"`
}

// SaveResult is k3s's SnapshotResult: the names of the snapshots written (on disk,
// then in S3) and pruned.
type SaveResult struct {
	Created []string `json:"created,omitempty"`
	Deleted []string `json:"deleted,omitempty"`
}

// Save asks the server behind the endpoint for one snapshot. The error is a
// *StatusError when k3s answered with one, and NotSent(err) tells whether the
// request can have reached k3s at all.
func (c *Client) Save(ctx context.Context, in SaveRequest) (SaveResult, error) {
	noPruning := 0
	sr := snapshotRequest{Operation: "save", Name: nameList(in.Name), Retention: &noPruning, S3: in.S3}
	if in.Dir != "" {
		sr.Dir = &in.Dir
	}
	if in.Compress {
		sr.Compress = &in.Compress
	}
	body, err := json.Marshal(sr)
	if err != nil {
		return SaveResult{}, err
	}
	b, err := c.post(ctx, body)
	if err != nil {
		return SaveResult{}, err
	}
	var out SaveResult
	if err := json.Unmarshal(b, &out); err != nil {
		return SaveResult{}, fmt.Errorf("reading k3s's answer to the snapshot request: %w", err)
	}
	return out, nil
}

func nameList(name string) []string {
	if name == "" {
		return nil
	}
	return []string{name}
}

func (c *Client) post(ctx context.Context, body []byte) ([]byte, error) {
	hc, err := c.httpClient()
	if err != nil {
		return nil, err
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Whether the request reached k3s decides whether a retry could take a second
	// snapshot: a failure before the request was written cannot have.
	wrote := false
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote = true }})
	url := "https://" + c.Endpoint + SnapshotPath
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(serverUser, c.Password)
	resp, err := hc.Do(req)
	if err != nil {
		if !wrote {
			return nil, &notSentError{err: err}
		}
		return nil, fmt.Errorf("POST %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of POST %s: %w", url, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, statusError(resp.StatusCode, b)
	}
	return b, nil
}

func (c *Client) httpClient() (*http.Client, error) {
	if c.Endpoint == "" {
		return nil, errors.New("the cluster has no control plane endpoint")
	}
	if c.Password == "" {
		return nil, errors.New("the join token has no server passphrase")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.CACert) {
		return nil, errors.New("the server CA holds no PEM certificate")
	}
	host, _, err := net.SplitHostPort(c.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("control plane endpoint %q: %w", c.Endpoint, err)
	}
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: connectTimeout}).DialContext,
		TLSHandshakeTimeout: connectTimeout,
		TLSClientConfig:     &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12},
		DisableKeepAlives:   true,
		Proxy:               http.ProxyFromEnvironment,
	}}, nil
}

// StatusError is an answer of k3s other than 2xx, with k3s's own message.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("k3s answered %d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

// statusError reads k3s's metav1.Status body, or keeps a short raw body when the
// answer is not one (a proxy in the way, say).
func statusError(code int, body []byte) *StatusError {
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err == nil && st.Message != "" {
		return &StatusError{Code: code, Message: st.Message}
	}
	msg := string(bytes.TrimSpace(body))
	if len(msg) > 256 {
		msg = msg[:256] + "..."
	}
	return &StatusError{Code: code, Message: msg}
}

type notSentError struct{ err error }

func (e *notSentError) Error() string {
	return fmt.Sprintf("reaching the k3s supervisor: %v", e.err)
}
func (e *notSentError) Unwrap() error { return e.err }

// NotSent tells that the request failed before it was written (no connection,
// TLS refused): k3s cannot have taken a snapshot, and the request may be retried.
func NotSent(err error) bool {
	var ns *notSentError
	return errors.As(err, &ns)
}
