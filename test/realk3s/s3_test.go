package realk3s

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/capk3s/capk3s/test/realk3s/host"
)

// The S3 service the snapshot scenarios save to: an S3 gateway (make test-k3s builds
// versitygw) on a folder of the layer, on the host's side of the bridge, with SigV4
// keys, as a cluster's servers reach a bucket on their network.
const (
	gatewayEnv  = "CAPK3S_S3_GATEWAY"
	s3Bucket    = "k3s-backups"
	s3AccessKey = "capk3s-realk3s"
	s3SecretKey = "realk3s-secret-access-key"
)

// s3Gateway is the running gateway; nil when make test-k3s gave none.
type s3Gateway struct {
	endpoint string
	cmd      *exec.Cmd
	client   *minio.Client
}

var s3 *s3Gateway

// startS3 starts the gateway on a free port of the host's bridge address and creates
// the bucket.
func startS3(gateway, dir string) (*s3Gateway, error) {
	l, err := net.Listen("tcp", host.HostAddress+":0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	// Each run starts with an empty bucket: an earlier run's snapshots would be found
	// by k3s's list.
	data := filepath.Join(dir, "s3")
	if err := os.RemoveAll(data); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "s3.log"))
	if err != nil {
		return nil, err
	}
	endpoint := net.JoinHostPort(host.HostAddress, strconv.Itoa(port))
	cmd := exec.Command(gateway, "--port", endpoint, "--access", s3AccessKey, "--secret", s3SecretKey, "--quiet", "posix", data)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the S3 gateway: %w", err)
	}
	g := &s3Gateway{endpoint: endpoint, cmd: cmd}
	if g.client, err = minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4(s3AccessKey, s3SecretKey, "")}); err != nil {
		g.stop()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		err = g.client.MakeBucket(ctx, s3Bucket, minio.MakeBucketOptions{})
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		g.stop()
		return nil, fmt.Errorf("creating bucket %s: %w", s3Bucket, err)
	}
	return g, nil
}

func (g *s3Gateway) stop() {
	if g != nil && g.cmd.Process != nil {
		_ = g.cmd.Process.Kill()
		_ = g.cmd.Wait()
	}
}

// objects lists the object names under folder.
func (g *s3Gateway) objects(ctx context.Context, folder string) ([]string, error) {
	var out []string
	for o := range g.client.ListObjects(ctx, s3Bucket, minio.ListObjectsOptions{Prefix: folder + "/", Recursive: true}) {
		if o.Err != nil {
			return nil, o.Err
		}
		out = append(out, o.Key)
	}
	return out, nil
}
