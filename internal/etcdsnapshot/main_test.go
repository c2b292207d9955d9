package etcdsnapshot

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/capk3s/capk3s/test/envtest"
)

// env is one apiserver for the package: the management cluster, and also the
// workload cluster whose ETCDSnapshotFile records the fake k3s writes.
var env *envtest.Environment

func TestMain(m *testing.M) {
	envtest.RunMain(m, envtest.Options{}, &env)
}

func installETCDSnapshotFiles(t *testing.T) {
	t.Helper()
	if err := envtest.InstallETCDSnapshotFileCRD(context.Background(), env.Config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		t.Fatal(err)
	}
}
