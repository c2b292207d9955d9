package restoreplan

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// ProofWait bounds how long a restore waits in Pending for the k3s supervisor to
// answer its snapshot list: an endpoint that does not answer for this long is a
// cluster the restore cannot prove its snapshot on, and it is refused.
const ProofWait = 5 * time.Minute

// Proof is what the restore learnt of its snapshot from k3s itself, while the old
// servers still run: k3s's answer to the supervisor's "list" sent with the control
// plane's S3 settings and keys (pkg/etcd/snapshot_handler.go handleList).
type Proof struct {
	// Unreachable says why the supervisor could not be asked (no connection, no
	// answer): the restore waits and asks again, up to ProofWait.
	Unreachable string
	// Refused is k3s's answer when it was not a list: with the S3 block, a 400 says
	// k3s could not reach the bucket with these settings and keys.
	Refused string
	// Items are the snapshots k3s listed: the objects under the folder in the bucket
	// and the files on the answering server's disk.
	Items []Listed
}

// Listed is one snapshot of k3s's list.
type Listed struct {
	Name string
	// Location is "s3://<bucket>/<key>" for an object in S3.
	Location string
	Ready    bool
	Error    string
	// TokenHash is the hash of the server token of the cluster that took it, as k3s
	// recorded it with the object; "" when the object carries none.
	TokenHash string
}

// S3Target is where this control plane's servers read a snapshot from: the
// bucket and folder of its snapshots.s3, and the hash of its join token.
type S3Target struct {
	Bucket, Folder string
	TokenHash      string
}

// s3Location is the location k3s gives the object a new server downloads for name
// (pkg/etcd/s3/s3.go Download: the key is path.Join(folder, name)).
func (t S3Target) s3Location(name string) string {
	return fmt.Sprintf("s3://%s/%s", t.Bucket, path.Join(t.Folder, name))
}

// where names, for messages, what was checked.
func (t S3Target) where(name string) string {
	return fmt.Sprintf("snapshot %q in bucket %q, folder %q", name, t.Bucket, t.Folder)
}

// prove says whether k3s's list shows name as a snapshot this control plane's new
// server can restore: an object at the key a restore downloads, ready to use, taken
// by this cluster (its token's hash). wait is set while the list could not be had
// yet (since: when the restore was created, or its snapshot's name became known if
// later); problem when the snapshot is not
// provable, with what was checked.
func prove(name string, t S3Target, p Proof, cluster string, since, now time.Time) (wait, problem string) {
	what := fmt.Sprintf("checked with k3s's snapshot list on Cluster %s, with its snapshots.s3 settings and credentials: %s", cluster, t.where(name))
	switch {
	case p.Unreachable != "" && now.Sub(since) >= ProofWait:
		return "", fmt.Sprintf("%s; the k3s supervisor did not answer for %s: %s", what, ProofWait, p.Unreachable)
	case p.Unreachable != "":
		return fmt.Sprintf("proving the snapshot (%s); the k3s supervisor did not answer, asking again until %s: %s",
			t.where(name), stamp(since.Add(ProofWait)), p.Unreachable), ""
	case p.Refused != "":
		return "", fmt.Sprintf("%s; k3s could not list the bucket with these settings and credentials: %s", what, p.Refused)
	}
	want := t.s3Location(name)
	var elsewhere []string
	for _, it := range p.Items {
		if it.Location != want {
			if it.Name == name {
				elsewhere = append(elsewhere, it.Location)
			}
			continue
		}
		switch {
		case !it.Ready:
			return "", fmt.Sprintf("%s; k3s lists it as not ready to use: %s", what, orNone(it.Error))
		case it.TokenHash == "":
			return "", fmt.Sprintf("%s; the object carries no k3s token hash, so nothing shows it is this cluster's snapshot", what)
		case it.TokenHash != t.TokenHash:
			return "", fmt.Sprintf("%s; it was taken by a cluster with another join token (token hash %s, this cluster's %s): not this cluster's snapshot, whose data a server of this cluster cannot read",
				what, it.TokenHash, t.TokenHash)
		}
		return "", ""
	}
	msg := fmt.Sprintf("%s; k3s lists no object at %s", what, want)
	if len(elsewhere) > 0 {
		msg += "; a snapshot of that name is only at " + strings.Join(elsewhere, ", ")
	}
	return "", msg
}

func orNone(s string) string {
	if s == "" {
		return "no error recorded"
	}
	return s
}

// FindSafety is the restore's safety snapshot when k3s's list already shows it in
// the folder, ready: a pass that took it and stopped before recording its name.
func FindSafety(w World) string {
	if w.SafetyPrefix == "" {
		return ""
	}
	for _, it := range w.Proof.Items {
		if strings.HasPrefix(it.Name, w.SafetyPrefix+"-") && it.Location == w.S3.s3Location(it.Name) && it.Ready {
			return it.Name
		}
	}
	return ""
}
