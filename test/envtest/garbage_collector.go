package envtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// garbageCollector is a kube-controller-manager process running only the garbage
// collector controller, as an admin of the test apiserver.
type garbageCollector struct {
	cmd     *exec.Cmd
	dir     string
	exited  chan struct{}
	logFile *os.File
}

// startGarbageCollector starts the collector and returns once it has deleted an
// orphaned probe object: from then on tests can rely on it.
func startGarbageCollector(kubeconfig []byte, assets string, c client.Client) (*garbageCollector, error) {
	dir, err := os.MkdirTemp("", "capk3s-gc-")
	if err != nil {
		return nil, fmt.Errorf("garbage collector: %w", err)
	}
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, errors.Join(fmt.Errorf("garbage collector: writing kubeconfig: %w", err), os.RemoveAll(dir))
	}
	logFile, err := os.Create(filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("garbage collector: %w", err), os.RemoveAll(dir))
	}
	cmd := exec.Command(filepath.Join(assets, "kube-controller-manager"),
		"--kubeconfig="+kubeconfigPath,
		"--controllers=garbagecollector",
		"--leader-elect=false",
		// Port 0 turns off the secure serving port, which would otherwise be the fixed
		// 10257 and make parallel test packages collide.
		"--secure-port=0",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("garbage collector: starting kube-controller-manager: %w", err), logFile.Close(), os.RemoveAll(dir))
	}
	gc := &garbageCollector{cmd: cmd, dir: dir, exited: make(chan struct{}), logFile: logFile}
	go func() { _ = cmd.Wait(); close(gc.exited) }()

	if err := gc.waitUntilCollecting(c); err != nil {
		return nil, errors.Join(err, gc.stop())
	}
	return gc, nil
}

// waitUntilCollecting creates an owner and a dependent, deletes the owner, and waits
// for the collector to delete the dependent. A collector that has not synced its
// informers yet does nothing, so this is the only honest readiness signal.
func (gc *garbageCollector) waitUntilCollecting(c client.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gc-probe-owner", Namespace: metav1.NamespaceDefault}}
	if err := c.Create(ctx, owner); err != nil {
		return fmt.Errorf("garbage collector probe: %w", err)
	}
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gc-probe-dependent", Namespace: metav1.NamespaceDefault}}
	if err := controllerutil.SetOwnerReference(owner, dependent, c.Scheme()); err != nil {
		return fmt.Errorf("garbage collector probe: %w", err)
	}
	if err := c.Create(ctx, dependent); err != nil {
		return fmt.Errorf("garbage collector probe: %w", err)
	}
	if err := c.Delete(ctx, owner); err != nil {
		return fmt.Errorf("garbage collector probe: %w", err)
	}
	err := WaitFor(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		select {
		case <-gc.exited:
			return false, fmt.Errorf("kube-controller-manager exited; see %s", gc.logFile.Name())
		default:
		}
		err := c.Get(ctx, client.ObjectKeyFromObject(dependent), &corev1.ConfigMap{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		return fmt.Errorf("garbage collector never collected its probe: %w", err)
	}
	return nil
}

func (gc *garbageCollector) stop() error {
	select {
	case <-gc.exited:
	default:
		_ = gc.cmd.Process.Signal(os.Interrupt)
		select {
		case <-gc.exited:
		case <-time.After(10 * time.Second):
			_ = gc.cmd.Process.Kill()
			<-gc.exited
		}
	}
	return errors.Join(gc.logFile.Close(), os.RemoveAll(gc.dir))
}
