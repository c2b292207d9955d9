package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/test/envtest"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// The stand-in plays the system-upgrade-controller (SUC) on a simulated workload
// cluster. For each Plan it selects the Nodes by the Plan's nodeSelector and upgrades
// them one at a time, as SUC's Job would with the k3s-upgrade image: cordon the Node
// (and, when the Plan drains, mark it drained: nothing real runs there to evict),
// wait a moment, then k3s restarts on the new version: the Node reports it, still
// Ready, with its etcd member untouched; the Node is uncordoned and labelled
// plan.upgrade.cattle.io/<plan>=<hash>. The Plan's status then has latestVersion,
// latestHash and Complete=True. A Node annotated simv1.UpgradeFailAnnotation fails
// its Job: Complete=False, reason JobFailed.
//
// What the Job does to k3s is k3smodel.PlanJob's: k3s-upgrade's upgrade.sh restarts
// k3s only on a new release (the same binary is left alone); an upgrade container
// running chroot /host systemctl restart <the node's k3s unit> restarts k3s on the
// same release; another unit, or any other command, fails the Job. A restart renews
// the Node's certificates as k3s does (certs.go). On a Node whose kubelet client
// certificate has expired the Job's pod never starts (the API server refuses that
// kubelet): the Plan keeps applying to it and the Node is left alone.

var planResource = schema.GroupVersionResource{Group: "upgrade.cattle.io", Version: "v1", Resource: "plans"}

const (
	// upgradeDelay is how long a simulated upgrade Job takes on one Node.
	upgradeDelay = time.Second
	// sucStartedAnnotation on a Node holds the Plan hash and time its Job started.
	sucStartedAnnotation = "infrastructure.sim.capk3s.io/upgrade-started"
	// DrainedAnnotation marks a Node that a Plan drained.
	DrainedAnnotation = "infrastructure.sim.capk3s.io/drained"
	planLabelPrefix   = "plan.upgrade.cattle.io/"
)

type sucStandIn struct {
	c     client.Client
	queue workqueue.TypedDelayingInterface[types.NamespacedName]
	log   func(msg string, kv ...any)
	// wc is the cluster whose k3s the Jobs restart (certs.go); nil restarts nothing.
	wc *workloadCluster
}

// runSUC acts on Plans until ctx ends.
func runSUC(ctx context.Context, cfg *rest.Config, cl client.Client, key client.ObjectKey, wc *workloadCluster) {
	log := ctrl.Log.WithName("sim-suc").WithValues("cluster", key.String())
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		log.Error(err, "Dynamic client")
		return
	}
	s := &sucStandIn{c: cl, wc: wc, queue: workqueue.NewTypedDelayingQueue[types.NamespacedName](),
		log: func(msg string, kv ...any) { log.Info(msg, kv...) }}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 30*time.Second)
	enqueue := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			s.queue.Add(types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()})
		}
	}
	if _, err := factory.ForResource(planResource).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		log.Error(err, "Watching Plans")
		return
	}
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	for {
		key, shutdown := s.queue.Get()
		if shutdown {
			break
		}
		again, err := s.reconcile(ctx, key)
		if err != nil && ctx.Err() == nil {
			log.Error(err, "Acting on Plan", "plan", key.String())
			again = upgradeDelay
		}
		if again > 0 {
			s.queue.AddAfter(key, again)
		}
		s.queue.Done(key)
	}
	factory.Shutdown()
}

// reconcile takes one Plan a step further; it says when to look again.
func (s *sucStandIn) reconcile(ctx context.Context, key types.NamespacedName) (time.Duration, error) {
	plan := &unstructured.Unstructured{}
	plan.SetGroupVersionKind(planResource.GroupVersion().WithKind("Plan"))
	if err := s.c.Get(ctx, key, plan); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	spec, _ := plan.Object["spec"].(map[string]any)
	version, _ := spec["version"].(string)
	channel, _ := spec["channel"].(string)
	if _, err := k3smodel.ResolvePlanVersion(version, channel); err != nil {
		// SUC makes no Job for a Plan it cannot resolve, and waits for a new spec.
		return 0, s.setUnresolved(ctx, plan, err)
	}
	hash := specHash(spec)
	selector, err := planSelector(spec)
	if err != nil {
		return 0, s.setStatus(ctx, plan, version, "", nil, metav1.ConditionFalse, "Error", err.Error(), "Validated")
	}
	nodes := &corev1.NodeList{}
	if err := s.c.List(ctx, nodes, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return 0, err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Labels[planLabelPrefix+plan.GetName()] == hash {
			continue
		}
		// Concurrency 1, as the Plans capk3s makes ask: one Node at a time.
		return s.upgrade(ctx, plan, n, version, hash)
	}
	return 0, s.setStatus(ctx, plan, version, hash, nil, metav1.ConditionTrue, "Complete", "", "Complete")
}

// upgrade runs the Plan's Job on one Node, one step per call.
func (s *sucStandIn) upgrade(ctx context.Context, plan *unstructured.Unstructured, n *corev1.Node, version, hash string) (time.Duration, error) {
	if msg := n.Annotations[simv1.UpgradeFailAnnotation]; msg != "" {
		return 0, s.setStatus(ctx, plan, version, "", []string{n.Name}, metav1.ConditionFalse, "JobFailed", msg, "Complete")
	}
	spec, _ := plan.Object["spec"].(map[string]any)
	_, drains := spec["drain"].(map[string]any)
	cordons, _ := spec["cordon"].(bool)
	effect, err := s.jobEffect(spec, n, version)
	if err != nil {
		return 0, s.setStatus(ctx, plan, version, "", []string{n.Name}, metav1.ConditionFalse, "JobFailed", err.Error(), "Complete")
	}
	started, at := startedOf(n)
	if started != hash && s.wc != nil && s.wc.kubeletExpired(n.Name, time.Now()) {
		// The kubelet, refused by the API server, never sees the Job's pod: the Job
		// waits, and the Node stays as it is.
		return upgradeDelay, s.setStatus(ctx, plan, version, "", []string{n.Name}, metav1.ConditionFalse, "", "", "Complete")
	}
	if started != hash {
		before := n.DeepCopy()
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[sucStartedAnnotation] = hash + "@" + time.Now().UTC().Format(time.RFC3339Nano)
		if cordons || drains {
			n.Spec.Unschedulable = true
		}
		if drains {
			n.Annotations[DrainedAnnotation] = plan.GetName()
		}
		if err := s.c.Patch(ctx, n, client.MergeFrom(before)); err != nil {
			return 0, fmt.Errorf("cordoning Node %s: %w", n.Name, err)
		}
		s.log("Upgrading Node", "plan", plan.GetName(), "node", n.Name, "version", version)
		return upgradeDelay, s.setStatus(ctx, plan, version, "", []string{n.Name}, metav1.ConditionFalse, "", "", "Complete")
	}
	if wait := upgradeDelay - time.Since(at); wait > 0 {
		return wait, nil
	}
	if effect == k3smodel.JobUpgrades {
		// k3s restarted on the new binary: the kubelet reports the new version.
		statusBefore := n.DeepCopy()
		n.Status.NodeInfo.KubeletVersion = version
		n.Status.NodeInfo.KubeProxyVersion = version //nolint:staticcheck // k3s still reports it.
		if err := s.c.Status().Patch(ctx, n, client.MergeFrom(statusBefore)); err != nil {
			return 0, fmt.Errorf("setting Node %s's version: %w", n.Name, err)
		}
		if s.wc != nil {
			s.wc.kubeletRuns(n.Name, version)
		}
	}
	if effect != k3smodel.JobNoRestart && s.wc != nil {
		renewed := s.wc.restartK3s(n.Name, time.Now())
		s.log("Restarted k3s", "plan", plan.GetName(), "node", n.Name, "renewedCertificates", len(renewed))
	}
	before := n.DeepCopy()
	delete(n.Annotations, sucStartedAnnotation)
	delete(n.Annotations, DrainedAnnotation)
	n.Spec.Unschedulable = false
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[planLabelPrefix+plan.GetName()] = hash
	if err := s.c.Patch(ctx, n, client.MergeFrom(before)); err != nil {
		return 0, fmt.Errorf("uncordoning Node %s: %w", n.Name, err)
	}
	s.log("Upgraded Node", "plan", plan.GetName(), "node", n.Name, "version", version)
	// The next Node, or the Plan's completion.
	return time.Millisecond, nil
}

// jobEffect is what the Plan's Job does to k3s on the Node (k3smodel.PlanJob), or
// why it fails.
func (s *sucStandIn) jobEffect(spec map[string]any, n *corev1.Node, version string) (k3smodel.JobEffect, error) {
	upgrade, _ := spec["upgrade"].(map[string]any)
	command, err := stringsOf(upgrade["command"])
	if err != nil {
		return k3smodel.JobNoRestart, fmt.Errorf("spec.upgrade.command: %w", err)
	}
	args, err := stringsOf(upgrade["args"])
	if err != nil {
		return k3smodel.JobNoRestart, fmt.Errorf("spec.upgrade.args: %w", err)
	}
	server := n.Labels["node-role.kubernetes.io/control-plane"] == "true"
	if s.wc != nil {
		if srv, known := s.wc.certsServer(n.Name); known {
			server = srv
		}
	}
	return k3smodel.PlanJob(command, args, version, n.Status.NodeInfo.KubeletVersion, server)
}

// stringsOf reads a list of strings from a Plan.
func stringsOf(v any) ([]string, error) {
	list, ok := v.([]any)
	if v == nil {
		return nil, nil
	}
	if !ok {
		return nil, fmt.Errorf("%v is not a list", v)
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		str, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("%v is not a string", e)
		}
		out = append(out, str)
	}
	return out, nil
}

// setStatus writes the Plan's status as SUC does: the resolved version, the hash of
// the spec applied everywhere ("" until then), the Nodes being applied, a condition.
func (s *sucStandIn) setStatus(ctx context.Context, plan *unstructured.Unstructured, version, hash string, applying []string,
	status metav1.ConditionStatus, reason, msg, condType string) error {
	before := plan.DeepCopy()
	latest, _ := k3smodel.ResolvePlanVersion(version, "")
	st := map[string]any{"latestVersion": latest}
	if hash != "" {
		st["latestHash"] = hash
	} else if old, ok, _ := unstructured.NestedString(plan.Object, "status", "latestHash"); ok {
		st["latestHash"] = old
	}
	if len(applying) > 0 {
		a := make([]any, len(applying))
		for i, n := range applying {
			a[i] = n
		}
		st["applying"] = a
	}
	conds := []any{map[string]any{"type": "LatestResolved", "status": "True", "reason": "Version"}}
	if condType != "Complete" {
		conds = append(conds, map[string]any{"type": "Complete", "status": "False"})
	}
	conds = append(conds, map[string]any{"type": condType, "status": string(status), "reason": reason, "message": msg})
	st["conditions"] = conds
	plan.Object["status"] = st
	if sameJSON(before.Object["status"], st) {
		return nil
	}
	if err := s.c.Status().Update(ctx, plan); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("updating Plan %s's status: %w", plan.GetName(), err)
	}
	return nil
}

// planSelector is the Nodes a Plan applies to, as SUC selects them: its nodeSelector,
// and a host name label present (rancher/system-upgrade-controller,
// pkg/upgrade/plan/plan.go, NodeSelector). A Plan selecting by a label no Node has
// runs nowhere.
func planSelector(spec map[string]any) (labels.Selector, error) {
	raw, err := json.Marshal(spec["nodeSelector"])
	if err != nil {
		return nil, err
	}
	ls := &metav1.LabelSelector{}
	if err := json.Unmarshal(raw, ls); err != nil {
		return nil, fmt.Errorf("spec.nodeSelector: %w", err)
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, err
	}
	hostname, err := labels.NewRequirement(corev1.LabelHostname, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	return sel.Add(*hostname), nil
}

// specHash stands for SUC's hash of a Plan's spec: it changes when the spec does.
func specHash(spec map[string]any) string {
	raw, _ := json.Marshal(spec)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])[:32]
}

// startedOf reads sucStartedAnnotation: the Plan hash and the start time.
func startedOf(n *corev1.Node) (string, time.Time) {
	v := n.Annotations[sucStartedAnnotation]
	for i := len(v) - 1; i >= 0; i-- {
		if v[i] == '@' {
			t, err := time.Parse(time.RFC3339Nano, v[i+1:])
			if err != nil {
				return "", time.Time{}
			}
			return v[:i], t
		}
	}
	return "", time.Time{}
}

func sameJSON(a, b any) bool {
	ra, errA := json.Marshal(a)
	rb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ra) == string(rb)
}

// wantsSUC says whether a SimCluster's workload cluster has SUC installed.
func (p *Provider) wantsSUC(sc *simv1.SimCluster) bool {
	return p.SystemUpgradeController || sc.Annotations[simv1.SystemUpgradeControllerAnnotation] == "true"
}

// ensureSUC installs SUC on the workload cluster once its API serves, and starts the
// stand-in; it does nothing before the API is up or once SUC runs.
func (c *workloadCluster) ensureSUC(ctx context.Context) error {
	c.mu.Lock()
	if c.closed || c.api == nil || c.quorumLost || c.stopSUC != nil {
		c.mu.Unlock()
		return nil
	}
	cfg, cl := c.config, c.client
	c.mu.Unlock()
	if err := envtest.InstallSystemUpgradeController(ctx, cfg); err != nil {
		return fmt.Errorf("installing the system-upgrade-controller: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.api == nil || c.stopSUC != nil {
		return nil
	}
	sucCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.stopSUC = cancel
	go runSUC(sucCtx, cfg, cl, c.key, c)
	return nil
}
