package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// poolData is the pool's bootstrap data as a new instance would read it now.
type poolData struct {
	raw    []byte
	format string
	// hash tells instances booted from this data from those booted from older data.
	hash string
}

func readPoolData(ctx context.Context, c client.Reader, namespace, name string) (*poolData, error) {
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		return nil, fmt.Errorf("reading the bootstrap data: %w", err)
	}
	sum := sha256.New()
	sum.Write(s.Data["format"])
	sum.Write([]byte{0})
	sum.Write(s.Data["value"])
	return &poolData{raw: s.Data["value"], format: string(s.Data["format"]), hash: hex.EncodeToString(sum.Sum(nil))[:16]}, nil
}

// boot starts a new instance from the data, as a SimMachine boots: the data is checked
// as k3s would check it, the join as the cluster's servers would (token, CA pin,
// server URL), and the kubelet registers the Node. A reason says why the instance
// did not join.
func (r *poolReconciler) boot(ctx context.Context, namespace, pool string, kernelWithoutWireGuard bool, wc *workloadCluster, data *poolData) (inst simv1.SimMachinePoolInstance, reason, message string, err error) {
	b, err := readBootData(data.raw, data.format)
	if err == nil {
		err = b.checkStatic()
	}
	if err != nil {
		return inst, bootstrapDataInvalidReason, err.Error(), nil
	}
	if b.install.role != roleAgent {
		return inst, poolNotAgentsReason, "the pool's bootstrap data installs a k3s " + b.install.role + "; pool instances run agents", nil
	}
	cl, s, err := wc.ready()
	switch {
	case errors.Is(err, errNotInitialized):
		return inst, waitingForFirstServerReason, "", nil
	case err != nil:
		return inst, apiUnavailableReason, err.Error(), nil
	}
	if err := b.checkJoin(s, wc.reaches, data.raw); err != nil {
		return inst, joinRefusedReason, err.Error(), nil
	}
	if err := b.checkFlannelKernel(s, kernelWithoutWireGuard); err != nil {
		// k3s exits once flannel starts, after every restart (flannel.go).
		return inst, bootFailureReason(err), err.Error(), nil
	}
	name := pool + "-" + utilrand.String(5)
	providerID := "sim://" + namespace + "/" + name
	n, err := nodeFor(b, name, providerID)
	if err != nil {
		return inst, bootstrapDataInvalidReason, err.Error(), nil
	}
	if err := n.register(ctx, cl, wc); err != nil {
		return inst, joinRefusedReason, err.Error(), err
	}
	return simv1.SimMachinePoolInstance{
		Name: name, ProviderID: providerID, NodeName: n.name, K3sVersion: b.install.version, DataHash: data.hash,
	}, "", "", nil
}

// removeNode deletes a gone instance's Node, if the workload API still serves.
func removeNode(ctx context.Context, wc *workloadCluster, name string) error {
	cl, _, err := wc.ready()
	if err != nil {
		// No API, no Node to remove: the cluster is going or never started.
		return nil
	}
	if err := cl.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Node %s: %w", name, err)
	}
	return nil
}
