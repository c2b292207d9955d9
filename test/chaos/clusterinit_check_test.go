package chaos

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/yaml"

	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// k3sConfigPath is where bootstrap data writes k3s's configuration.
const k3sConfigPath = "/etc/rancher/k3s/config.yaml"

// clusterInitChecker reads every bootstrap data Secret as it appears and records which
// machines would start k3s with cluster-init: a cluster has at most one, ever (a
// second would start a second, separate etcd). It also watches the SimMachines for a
// machine whose boot the simulated k3s refused.
type clusterInitChecker struct {
	tally
	reg *registry

	initMu sync.Mutex
	inits  map[types.NamespacedName]sets.Set[string]
}

func newClusterInitChecker(reg *registry) *clusterInitChecker {
	return &clusterInitChecker{reg: reg, inits: map[types.NamespacedName]sets.Set[string]{}}
}

func (c *clusterInitChecker) name() string { return "one cluster-init server per cluster" }

func (c *clusterInitChecker) secretHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    c.secret,
		UpdateFunc: func(_, obj any) { c.secret(obj) },
	}
}

func (c *clusterInitChecker) secret(obj any) {
	s, ok := obj.(*corev1.Secret)
	if !ok || !ownedBy(s.OwnerReferences, "KThreesConfig") || len(s.Data["value"]) == 0 {
		return
	}
	key := types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[clusterv1.ClusterNameLabel]}
	if c.reg.get(key) == nil {
		return
	}
	init, err := clusterInit(s.Data["value"])
	c.check(err == nil, "%s: bootstrap data %s: %v", key, s.Name, err)
	if !init {
		return
	}
	c.initMu.Lock()
	defer c.initMu.Unlock()
	if c.inits[key] == nil {
		c.inits[key] = sets.New[string]()
	}
	c.inits[key].Insert(s.Name)
	c.check(c.inits[key].Len() == 1, "%s: %d machines got cluster-init: %v", key, c.inits[key].Len(), sets.List(c.inits[key]))
}

func (c *clusterInitChecker) machineHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    c.machine,
		UpdateFunc: func(_, obj any) { c.machine(obj) },
	}
}

// machine fails on a SimMachine whose boot k3s would refuse.
func (c *clusterInitChecker) machine(obj any) {
	m, ok := obj.(*simv1.SimMachine)
	if !ok {
		return
	}
	cond := conditions.Get(m, clusterv1.ReadyCondition)
	if cond == nil || cond.Status == metav1.ConditionTrue {
		return
	}
	refused := cond.Reason == "JoinRefused" || cond.Reason == "BootstrapDataInvalid"
	c.check(!refused, "SimMachine %s/%s: %s: %s", m.Namespace, m.Name, cond.Reason, cond.Message)
}

// clusterInit says whether cloud-config bootstrap data starts k3s with cluster-init.
func clusterInit(data []byte) (bool, error) {
	var cc struct {
		WriteFiles []struct {
			Path, Content, Encoding string
		} `json:"write_files"`
	}
	if err := yaml.Unmarshal(data, &cc); err != nil {
		return false, err
	}
	for _, f := range cc.WriteFiles {
		if f.Path != k3sConfigPath {
			continue
		}
		raw, err := decode(f.Content, f.Encoding)
		if err != nil {
			return false, err
		}
		var cfg map[string]any
		if err := yaml.Unmarshal(raw, &cfg); err != nil {
			return false, err
		}
		init, _ := cfg["cluster-init"].(bool)
		return init, nil
	}
	return false, nil
}

// decode undoes cloud-init's write_files encodings.
func decode(content, encoding string) ([]byte, error) {
	e := strings.ToLower(encoding)
	raw := []byte(content)
	if strings.Contains(e, "b64") || strings.Contains(e, "base64") {
		var err error
		if raw, err = base64.StdEncoding.DecodeString(content); err != nil {
			return nil, err
		}
	}
	if strings.HasPrefix(e, "gz") {
		r, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	}
	return raw, nil
}

func ownedBy(refs []metav1.OwnerReference, kind string) bool {
	for _, r := range refs {
		if r.Kind == kind {
			return true
		}
	}
	return false
}
