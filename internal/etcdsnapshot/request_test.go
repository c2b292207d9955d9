package etcdsnapshot

import (
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// The request's S3 timeout is the servers' etcd-s3-timeout: k3s does not default a
// request's, so without one its bucket check would time out at once.
func TestS3TimeoutFollowsTheServers(t *testing.T) {
	for _, tc := range []struct {
		extra string
		want  time.Duration
	}{
		{"", 5 * time.Minute},
		{`"10m"`, 10 * time.Minute},
		{`"90s"`, 90 * time.Second},
		{`"0s"`, 5 * time.Minute},
		{`true`, 5 * time.Minute},
		{`"soon"`, 5 * time.Minute},
	} {
		kcp := &controlplanev1.KThreesControlPlane{}
		if tc.extra != "" {
			kcp.Spec.KThreesConfigSpec.ServerConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"etcd-s3-timeout": {Raw: []byte(tc.extra)}}
		}
		if got := s3Timeout(kcp); got != tc.want {
			t.Errorf("etcd-s3-timeout %s: %v, want %v", tc.extra, got, tc.want)
		}
	}
}
