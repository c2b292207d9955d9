package k3smodel

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAuthorizeSnapshot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		caller Caller
		want   int
	}{
		{name: "server user with the token's password", caller: Caller{Basic: true, User: "server", Password: "s3rver"}},
		{name: "wrong password", caller: Caller{Basic: true, User: "server", Password: "nope"}, want: http.StatusUnauthorized},
		{name: "unknown user", caller: Caller{Basic: true, User: "admin", Password: "s3rver"}, want: http.StatusUnauthorized},
		{name: "agent user", caller: Caller{Basic: true, User: "node", Password: "ag3nt"}, want: http.StatusForbidden},
		{name: "no credentials", want: http.StatusForbidden},
		{name: "admin certificate", caller: Caller{Cert: true, CertValid: true, Groups: []string{"system:masters"}}, want: http.StatusForbidden},
		{name: "certificate with the server role", caller: Caller{Cert: true, CertValid: true, Groups: []string{ServerRole}}},
		{name: "certificate of another CA", caller: Caller{Cert: true}, want: http.StatusUnauthorized},
		{name: "bad password, good certificate", caller: Caller{Basic: true, User: "server", Password: "x", Cert: true, CertValid: true, Groups: []string{ServerRole}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got, msg := AuthorizeSnapshot(tc.caller, "s3rver", "ag3nt"); got != tc.want {
				t.Errorf("AuthorizeSnapshot() = %d %q, want %d", got, msg, tc.want)
			}
		})
	}
}

func TestSaveSettings(t *testing.T) {
	t.Parallel()
	// The server's own etcd-snapshot-dir is not what an on-demand save uses.
	server := SnapshotSettings{Name: "etcd-snapshot", Dir: "/srv/etcd-snapshots", Compress: true,
		S3: &EtcdS3{Bucket: "server-bucket"}}
	dir, off := "/snap", false
	for _, tc := range []struct {
		name string
		req  SnapshotRequest
		want SnapshotSettings
	}{
		// The server's S3 is not used: only the request's is.
		{name: "bare save", req: SnapshotRequest{Operation: SnapshotSave},
			want: SnapshotSettings{Name: "etcd-snapshot", Dir: DefaultSnapshotDir, Compress: true}},
		{name: "CLI save with S3", req: SnapshotRequest{Operation: SnapshotSave, Name: []string{OnDemandSnapshotName}, Dir: &dir, Compress: &off, S3: &EtcdS3{Bucket: "b", Folder: "f"}},
			want: SnapshotSettings{Name: "on-demand", Dir: "/snap", S3: &EtcdS3{Bucket: "b", Folder: "f"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := SaveSettings(tc.req, server); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("SaveSettings() = %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := SnapshotName(OnDemandSnapshotName, "cp-0", 1700000000, true); got != "on-demand-cp-0-1700000000.zip" {
		t.Errorf("SnapshotName() = %q", got)
	}
}

func TestS3ClientError(t *testing.T) {
	t.Parallel()
	good := EtcdS3{Bucket: "b", Endpoint: "s3.amazonaws.com", AccessKey: "a", SecretKey: "s", Timeout: metav1.Duration{Duration: time.Minute}}
	for _, tc := range []struct {
		name string
		edit func(*EtcdS3)
		want string
	}{
		{name: "complete", edit: func(*EtcdS3) {}},
		{name: "no bucket", edit: func(s *EtcdS3) { s.Bucket = "" }, want: "s3 bucket name was not set"},
		{name: "no endpoint", edit: func(s *EtcdS3) { s.Endpoint = "" }, want: "Endpoint:  does not follow ip address or domain name standards."},
		{name: "no timeout", edit: func(s *EtcdS3) { s.Timeout = metav1.Duration{} }, want: "context deadline exceeded"},
		{name: "no secret key", edit: func(s *EtcdS3) { s.SecretKey = "" }, want: "Access Denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := good
			tc.edit(&s)
			err := S3ClientError(&s)
			if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("S3ClientError() = %v, want %q", err, tc.want)
			}
		})
	}
}
