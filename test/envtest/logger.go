package envtest

import (
	"io"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// setTestLogger gives controllers under test a logger: their logs go to standard
// error when CAPK3S_TEST_LOGS is set (to debug a test), and nowhere otherwise.
func setTestLogger() {
	w := io.Discard
	if os.Getenv("CAPK3S_TEST_LOGS") != "" {
		w = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(w), zap.UseDevMode(true)))
}
