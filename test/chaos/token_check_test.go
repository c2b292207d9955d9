package chaos

import (
	"bytes"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/capk3s/capk3s/internal/token"
)

// tokenChecker follows every tracked cluster's token Secret through the informer:
// it is never deleted nor replaced, and neither passphrase ever changes once set.
type tokenChecker struct {
	tally
	reg *registry

	seenMu sync.Mutex
	seen   map[types.NamespacedName]*corev1.Secret
}

func newTokenChecker(reg *registry) *tokenChecker {
	return &tokenChecker{reg: reg, seen: map[types.NamespacedName]*corev1.Secret{}}
}

func (c *tokenChecker) name() string { return "token Secret kept, value unchanged" }

// cluster is the tracked cluster whose token obj is, or nil.
func (c *tokenChecker) cluster(obj any) (*corev1.Secret, types.NamespacedName, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	s, ok := obj.(*corev1.Secret)
	if !ok || !strings.HasSuffix(s.Name, "-token") {
		return nil, types.NamespacedName{}, false
	}
	key := types.NamespacedName{Namespace: s.Namespace, Name: strings.TrimSuffix(s.Name, "-token")}
	return s, key, c.reg.get(key) != nil
}

func (c *tokenChecker) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    c.seenSecret,
		UpdateFunc: func(_, obj any) { c.seenSecret(obj) },
		DeleteFunc: func(obj any) {
			if _, key, ok := c.cluster(obj); ok {
				c.check(false, "%s: the token Secret was deleted", key)
			}
		},
	}
}

func (c *tokenChecker) seenSecret(obj any) {
	s, key, ok := c.cluster(obj)
	if !ok {
		return
	}
	c.seenMu.Lock()
	defer c.seenMu.Unlock()
	first := c.seen[key]
	if first == nil {
		c.seen[key] = s.DeepCopy()
		c.check(len(s.Data[token.ServerKey]) > 0, "%s: the token Secret has no %s", key, token.ServerKey)
		return
	}
	c.check(s.UID == first.UID, "%s: the token Secret was replaced (uid %s, then %s)", key, first.UID, s.UID)
	c.check(bytes.Equal(s.Data[token.ServerKey], first.Data[token.ServerKey]), "%s: the server token changed", key)
	if agent := first.Data[token.AgentKey]; len(agent) > 0 {
		c.check(bytes.Equal(s.Data[token.AgentKey], agent), "%s: the agent token changed", key)
	} else if len(s.Data[token.AgentKey]) > 0 {
		c.seen[key] = s.DeepCopy()
	}
}

// values are the passphrases seen, for the scan of logs and Events.
func (c *tokenChecker) values() []string {
	c.seenMu.Lock()
	defer c.seenMu.Unlock()
	var out []string
	for _, s := range c.seen {
		for _, k := range []string{token.ServerKey, token.AgentKey} {
			if v := s.Data[k]; len(v) > 0 {
				out = append(out, string(v))
			}
		}
	}
	return out
}

// sawAll fails for every tracked cluster whose token was never seen.
func (c *tokenChecker) sawAll() {
	c.seenMu.Lock()
	defer c.seenMu.Unlock()
	for _, t := range c.reg.all() {
		c.check(c.seen[t.key] != nil, "%s: the token Secret was never seen", t.key)
	}
}
