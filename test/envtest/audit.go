package envtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// auditWritesPolicy records who wrote what, without bodies.
const auditWritesPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// AuditEvent is the part of an audit log line that tests read: who wrote which object.
// With ManagerProcess, the user is the process's name.
type AuditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Received time.Time `json:"requestReceivedTimestamp"`
}

// AuditWrites restarts the environment's kube-apiserver with an audit log of every
// write, dir/audit.log (envtest's apiserver has none; the apiserver's own output goes
// to dir/kube-apiserver.log). It returns the log's path and the restarter, whose Stop
// must run before the environment stops.
func (e *Environment) AuditWrites(ctx context.Context, dir string) (string, *APIServerRestarter, error) {
	audit, policy := filepath.Join(dir, "audit.log"), filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditWritesPolicy), 0o600); err != nil {
		return "", nil, err
	}
	r := e.NewAPIServerRestarter(filepath.Join(dir, "kube-apiserver.log"),
		"--audit-policy-file="+policy, "--audit-log-path="+audit, "--audit-log-mode=blocking")
	if err := r.Restart(ctx, 0); err != nil {
		r.Stop()
		return "", nil, fmt.Errorf("restarting kube-apiserver with an audit log: %w", err)
	}
	return audit, r, nil
}

// ReadAuditLog reads the complete lines of the audit log at path after offset, and
// returns their events in the order the apiserver received the requests (lines come
// in the order requests completed) and the offset after the last complete line: an
// incomplete last line is read again next time. A log not written yet has no events.
func ReadAuditLog(path string, offset int64) ([]AuditEvent, int64, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, offset, nil
	}
	if err != nil {
		return nil, offset, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, 0); err != nil {
		return nil, offset, err
	}
	var events []AuditEvent
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			break
		}
		offset += int64(len(line))
		var e AuditEvent
		if json.Unmarshal(line, &e) == nil {
			events = append(events, e)
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].Received.Before(events[j].Received) })
	return events, offset, nil
}
