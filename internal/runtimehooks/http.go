package runtimehooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/transport"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
)

const (
	// discoveryTimeout bounds a discovery call, which has no handler settings.
	discoveryTimeout = 10 * time.Second
	// maxResponseBytes bounds what a response body may hold: an extension is another
	// program, and a runaway one must not exhaust this process's memory.
	maxResponseBytes = 20 << 20
)

// unreachableError is a failure to get a well-formed answer from an extension (no
// connection, a status other than 200, a body that is not the response): the errors a
// handler's failurePolicy Ignore forgives. A Failure the extension answers is not one.
type unreachableError struct{ err error }

func (e unreachableError) Error() string { return e.err.Error() }
func (e unreachableError) Unwrap() error { return e.err }

// endpoint is the URL of one hook of one handler (or of discovery, with handler ""),
// as the Runtime SDK lays them out under the extension's base URL.
func endpoint(cfg runtimev1.ClientConfig, hook runtimecatalog.GroupVersionHook, handler string) (*url.URL, error) {
	var u *url.URL
	switch {
	case cfg.Service.IsDefined():
		host := cfg.Service.Name + "." + cfg.Service.Namespace + ".svc"
		if cfg.Service.Port != nil {
			host = net.JoinHostPort(host, strconv.Itoa(int(*cfg.Service.Port)))
		}
		u = &url.URL{Scheme: "https", Host: host, Path: cfg.Service.Path}
	case cfg.URL != "":
		parsed, err := url.Parse(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("clientConfig.url: %w", err)
		}
		if parsed.Scheme != "https" {
			return nil, fmt.Errorf("clientConfig.url %q: extensions are called over https only", cfg.URL)
		}
		u = parsed
	default:
		return nil, errors.New("clientConfig names neither a service nor a url")
	}
	u.Path = path.Join(u.Path, runtimecatalog.GVHToPath(hook, handler))
	return u, nil
}

// httpClientFor returns the cached client for an extension's host and CA bundle.
func (c *hookClient) httpClientFor(u *url.URL, caBundle []byte) (*http.Client, error) {
	key := u.Hostname() + "\x00" + string(caBundle)
	c.httpMu.Lock()
	defer c.httpMu.Unlock()
	if hc, ok := c.http[key]; ok {
		return hc, nil
	}
	tlsConfig, err := transport.TLSConfigFor(&transport.Config{TLS: transport.TLSConfig{
		CAData: caBundle, CertFile: c.certFile, KeyFile: c.keyFile, ServerName: u.Hostname(),
		// Re-read on each handshake when changed: cert-manager renews the certificate.
		ReloadTLSFiles: c.certFile != "",
	}})
	if err != nil {
		return nil, fmt.Errorf("TLS settings for %s: %w", u.Host, err)
	}
	hc := &http.Client{
		Transport: utilnet.SetTransportDefaults(&http.Transport{TLSClientConfig: tlsConfig}),
		// An extension answers; it does not send the caller elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	c.http[key] = hc
	return hc, nil
}

// post sends request to u and decodes the answer into response. timeout, when set,
// bounds the call and is passed on to the extension as the Runtime SDK asks.
func (c *hookClient) post(ctx context.Context, u *url.URL, caBundle []byte, timeout time.Duration, request, response any) error {
	hc, err := c.httpClientFor(u, caBundle)
	if err != nil {
		return err
	}
	body, err := json.Marshal(request)
	if err != nil {
		return fmt.Errorf("encoding the request: %w", err)
	}
	if timeout > 0 {
		q := u.Query()
		q.Set("timeout", timeout.String())
		u.RawQuery = q.Encode()
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return unreachableError{fmt.Errorf("calling %s: %w", u.Redacted(), err)}
	}
	defer func() { _ = resp.Body.Close() }()
	limited := io.LimitReader(resp.Body, maxResponseBytes)
	if resp.StatusCode != http.StatusOK {
		text, _ := io.ReadAll(io.LimitReader(limited, 512))
		return unreachableError{fmt.Errorf("calling %s: status %d: %q", u.Redacted(), resp.StatusCode, text)}
	}
	if err := json.NewDecoder(limited).Decode(response); err != nil {
		return unreachableError{fmt.Errorf("calling %s: decoding the response: %w", u.Redacted(), err)}
	}
	return nil
}
