package envtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/k3s-io/kine/pkg/endpoint"
	"github.com/sirupsen/logrus"
)

// datastoreConnectTimeout bounds the connection check before kine starts.
const datastoreConnectTimeout = 5 * time.Second

// ErrDatastoreUnreachable marks a datastore kine could not connect to: wrong address,
// credentials or database.
var ErrDatastoreUnreachable = errors.New("datastore unreachable")

// Kine is kine, in this process, serving the etcd API on 127.0.0.1 in front of a SQL
// datastore, as k3s runs it in front of an external datastore.
type Kine struct {
	// URL is the etcd endpoint kube-apiserver is given (http://127.0.0.1:PORT).
	URL string

	cancel  context.CancelFunc
	wg      *sync.WaitGroup
	once    sync.Once
	stopErr error
}

var quietKine sync.Once

// StartKine starts kine on the datastore endpoint, a URL as k3s's datastore-endpoint
// takes it (postgres://user:password@host:port/db?sslmode=disable). A postgres endpoint
// is connected to once first: kine itself retries a failing connection for five
// minutes, where a test wants the refusal at once.
func StartKine(ctx context.Context, datastore string) (*Kine, error) {
	quietKine.Do(func() {
		// kine logs every start and stop at Info, through logrus's global logger.
		logrus.SetLevel(logrus.WarnLevel)
	})
	if strings.HasPrefix(datastore, "postgres://") || strings.HasPrefix(datastore, "postgresql://") {
		if err := pingPostgres(ctx, datastore); err != nil {
			return nil, err
		}
	}
	kctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	k := &Kine{cancel: cancel, wg: &sync.WaitGroup{}}
	cfg, err := endpoint.Listen(kctx, endpoint.Config{
		Listener:  "tcp://" + workloadHost + ":0",
		Endpoint:  datastore,
		WaitGroup: k.wg,
		// kine's command-line defaults: the library has none of its own.
		NotifyInterval:      5 * time.Second,
		EmulatedETCDVersion: "3.6.11",
		CompactTimeout:      5 * time.Second,
		CompactMinRetain:    1000,
		CompactBatchSize:    1000,
		PollBatchSize:       500,
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%w: kine: %w", ErrDatastoreUnreachable, err)
	}
	if len(cfg.Endpoints) != 1 {
		return nil, errors.Join(fmt.Errorf("kine: want one etcd endpoint, got %v", cfg.Endpoints), k.Stop())
	}
	k.URL = cfg.Endpoints[0]
	return k, nil
}

// pingPostgres connects once. The error never quotes the endpoint, which holds a
// password.
func pingPostgres(ctx context.Context, datastore string) error {
	ctx, cancel := context.WithTimeout(ctx, datastoreConnectTimeout)
	defer cancel()
	cfg, err := pgx.ParseConfig(datastore)
	if err != nil {
		return fmt.Errorf("%w: the endpoint is not a PostgreSQL URL", ErrDatastoreUnreachable)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("%w: connecting to PostgreSQL at %s:%d as %s: %w", ErrDatastoreUnreachable, cfg.Host, cfg.Port, cfg.User, redact(err, cfg.Password))
	}
	return conn.Close(ctx)
}

// redact drops a password from an error's text, should a driver ever quote it.
func redact(err error, password string) error {
	if password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), password, "<redacted>"))
}

// kineStopTimeout bounds Stop: kine gives its gRPC server 2s to drain, then closes
// its database connections.
const kineStopTimeout = 15 * time.Second

// Stop ends kine's gRPC server and its database connections, and waits for them.
// Calling it again returns the first call's result.
func (k *Kine) Stop() error {
	k.once.Do(func() {
		k.cancel()
		done := make(chan struct{})
		go func() { k.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(kineStopTimeout):
			k.stopErr = fmt.Errorf("kine did not stop within %s", kineStopTimeout)
		}
	})
	return k.stopErr
}
