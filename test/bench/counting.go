package main

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
)

// requestCounter counts the management API requests of everything in this process
// (CAPI core, the provider under test, the in-memory backend), by verb and resource as
// the apiserver itself names them, and the 409 Conflict answers among them. Events are
// counted apart: they are fire-and-forget and say nothing about reconcile cost.
type requestCounter struct {
	// infos parses a request the way the apiserver does (k8s.io/apiserver), so that
	// "get" and "list", subresources and collection deletes are told apart exactly.
	infos *request.RequestInfoFactory

	// trace, while set, prints every counted write with the object's name and the
	// start of the request body, to find out who writes what (-trace-idle).
	trace atomic.Pointer[io.Writer]

	mu        sync.Mutex
	counts    map[requestKey]int
	conflicts map[requestKey]int
	events    int
}

// requestKey is one kind of request by one controller (attribution.go).
type requestKey struct{ controller, verb, resource string }

func newRequestCounter() *requestCounter {
	return &requestCounter{
		infos: &request.RequestInfoFactory{
			APIPrefixes:          sets.NewString("api", "apis"),
			GrouplessAPIPrefixes: sets.NewString("api"),
		},
		counts:    map[requestKey]int{},
		conflicts: map[requestKey]int{},
	}
}

// wrap makes cfg's requests go through the counter.
func (c *requestCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			c.record(req, resp)
			return resp, err
		})
	})
	return cfg
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (c *requestCounter) record(req *http.Request, resp *http.Response) {
	info, err := c.infos.NewRequestInfo(req)
	if err != nil || !info.IsResourceRequest {
		return
	}
	key := requestKey{controller: controllerOf(req.Context()), verb: info.Verb, resource: info.Resource}
	if info.Subresource != "" {
		key.resource += "/" + info.Subresource
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if info.Resource == "events" {
		c.events++
		return
	}
	c.counts[key]++
	if w := c.trace.Load(); w != nil && isWrite(info.Verb) {
		traceWrite(*w, info, req, resp, key.controller)
	}
	if resp != nil && resp.StatusCode == http.StatusConflict {
		c.conflicts[key]++
	}
}

// traceBodyLimit is how much of a write's body a trace line shows: enough for a control
// plane's whole status, to tell which field an idle status patch changed.
const traceBodyLimit = 16000

// traceWrite prints one write: time, verb, resource, object, the answer's status code,
// the controller that sent it and up to 16000 bytes of body. The code and the
// controller tell a 409 and whose it was from the line alone.
func traceWrite(w io.Writer, info *request.RequestInfo, req *http.Request, resp *http.Response, controller string) {
	body := ""
	if req.GetBody != nil {
		if r, err := req.GetBody(); err == nil {
			b, _ := io.ReadAll(io.LimitReader(r, traceBodyLimit))
			body = string(b)
		}
	}
	code := 0
	if resp != nil {
		code = resp.StatusCode
	}
	_, _ = fmt.Fprintf(w, "%s write %s %s/%s %s/%s %d %s: %s\n", time.Now().Format("15:04:05.000"), info.Verb, info.Resource, info.Subresource,
		info.Namespace, info.Name, code, controller, body)
}

// snapshot is what the counter has seen so far.
func (c *requestCounter) snapshot() requestCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := requestCounts{ByKey: map[requestKey]int{}, ConflictsByKey: map[requestKey]int{}, Events: c.events}
	for k, n := range c.counts {
		s.ByKey[k] = n
		if isWrite(k.verb) {
			s.Writes += n
		} else {
			s.Reads += n
		}
	}
	for k, n := range c.conflicts {
		s.Conflicts += n
		s.ConflictsByKey[k] = n
	}
	return s
}

// requestCounts are counts at one moment; since gives the difference to an earlier one.
type requestCounts struct {
	ByKey map[requestKey]int
	// ConflictsByKey are the 409 answers (conflicts and AlreadyExists) by request.
	ConflictsByKey map[requestKey]int
	Reads          int
	Writes         int
	Conflicts      int
	Events         int
}

func (s requestCounts) since(before requestCounts) requestCounts {
	d := requestCounts{
		ByKey:          map[requestKey]int{},
		ConflictsByKey: map[requestKey]int{},
		Reads:          s.Reads - before.Reads,
		Writes:         s.Writes - before.Writes,
		Conflicts:      s.Conflicts - before.Conflicts,
		Events:         s.Events - before.Events,
	}
	for k, n := range s.ByKey {
		if n -= before.ByKey[k]; n != 0 {
			d.ByKey[k] = n
		}
	}
	for k, n := range s.ConflictsByKey {
		if n -= before.ConflictsByKey[k]; n != 0 {
			d.ConflictsByKey[k] = n
		}
	}
	return d
}

// sorted lists the counts of every controller together, largest first, then by verb
// and resource.
func (s requestCounts) sorted() []countEntry { return sortedEntries(s.ByKey) }

func sortedEntries(counts map[requestKey]int) []countEntry {
	sum := map[requestKey]int{}
	for k, n := range counts {
		sum[requestKey{verb: k.verb, resource: k.resource}] += n
	}
	return sortedByController(sum)
}

// sortedByController lists the counts of each controller apart.
func sortedByController(counts map[requestKey]int) []countEntry {
	out := make([]countEntry, 0, len(counts))
	for k, n := range counts {
		out = append(out, countEntry{Controller: k.controller, Verb: k.verb, Resource: k.resource, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		if out[i].Controller != out[j].Controller {
			return out[i].Controller < out[j].Controller
		}
		if out[i].Verb != out[j].Verb {
			return out[i].Verb < out[j].Verb
		}
		return out[i].Resource < out[j].Resource
	})
	return out
}

// of keeps the counts of the given controllers only.
func (s requestCounts) of(controllers []string) requestCounts {
	keep := map[string]bool{}
	for _, c := range controllers {
		keep[c] = true
	}
	out := requestCounts{ByKey: map[requestKey]int{}, ConflictsByKey: map[requestKey]int{}}
	for k, n := range s.ByKey {
		if keep[k.controller] {
			out.ByKey[k] = n
			if isWrite(k.verb) {
				out.Writes += n
			} else {
				out.Reads += n
			}
		}
	}
	for k, n := range s.ConflictsByKey {
		if keep[k.controller] {
			out.ConflictsByKey[k] = n
			out.Conflicts += n
		}
	}
	return out
}

// byController sums reads, writes and 409 answers per controller, most requests first.
func (s requestCounts) byController() []controllerCount {
	sums := map[string]*controllerCount{}
	get := func(name string) *controllerCount {
		if sums[name] == nil {
			sums[name] = &controllerCount{Controller: name}
		}
		return sums[name]
	}
	for k, n := range s.ByKey {
		if isWrite(k.verb) {
			get(k.controller).Writes += n
		} else {
			get(k.controller).Reads += n
		}
	}
	for k, n := range s.ConflictsByKey {
		get(k.controller).Conflicts += n
	}
	out := make([]controllerCount, 0, len(sums))
	for _, c := range sums {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := out[i].Reads+out[i].Writes, out[j].Reads+out[j].Writes; a != b {
			return a > b
		}
		return out[i].Controller < out[j].Controller
	})
	return out
}

type countEntry struct {
	// Controller is set in per-controller lists only.
	Controller string `json:"controller,omitempty"`
	Verb       string `json:"verb"`
	Resource   string `json:"resource"`
	Count      int    `json:"count"`
}

// controllerCount is one controller's requests.
type controllerCount struct {
	Controller string `json:"controller"`
	Reads      int    `json:"reads"`
	Writes     int    `json:"writes"`
	Conflicts  int    `json:"conflicts"`
}

// isWrite says whether an apiserver verb changes state.
func isWrite(verb string) bool {
	switch verb {
	case "get", "list", "watch":
		return false
	}
	return true
}
