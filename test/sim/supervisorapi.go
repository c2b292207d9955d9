package sim

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"path"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// saveTimeout bounds one on-demand save, as the CLI's request timeout does.
const saveTimeout = time.Minute

// serveSupervisor answers k3s's etcd snapshot API on the endpoint (k3smodel's
// SnapshotPath): authorized as k3s authorizes it, then save and list as the server
// that answers would. The endpoint stands for a load balancer over the servers, so
// the answering server is one whose etcd member is up: the first by Node name.
// prune and delete are not played; they are refused with 501 so that a caller that
// relies on them fails loudly.
func (c *workloadCluster) serveSupervisor(w http.ResponseWriter, r *http.Request, caller k3smodel.Caller) {
	c.mu.Lock()
	serverPass, agentPass := c.secrets.serverPass, c.secrets.agentPass
	c.mu.Unlock()
	if code, msg := k3smodel.AuthorizeSnapshot(caller, serverPass, agentPass); code != 0 {
		reason := metav1.StatusReasonForbidden
		if code == http.StatusUnauthorized {
			reason = metav1.StatusReasonUnauthorized
		}
		writeStatus(w, code, reason, msg)
		return
	}
	// k3s answers a bad request with an error ID only, the error going to its log
	// (pkg/util/apierrors.go SendErrorWithID).
	sr, err := readSnapshotRequest(r)
	if err != nil {
		internalError(w)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), saveTimeout)
	defer cancel()
	switch sr.Operation {
	case k3smodel.SnapshotSave:
		if sr.S3 != nil {
			if err := k3smodel.S3ClientError(sr.S3); err != nil {
				writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "failed to initialize S3 client: "+err.Error())
				return
			}
		}
		res, err := c.saveOnDemand(ctx, sr, time.Now())
		if err != nil {
			internalError(w)
			return
		}
		writeJSON(w, res)
	case k3smodel.SnapshotList:
		// As save: the request's S3 block is checked first (handleList).
		if sr.S3 != nil {
			if err := k3smodel.S3ClientError(sr.S3); err != nil {
				writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "failed to initialize S3 client: "+err.Error())
				return
			}
		}
		list, err := c.listSnapshots(sr)
		if err != nil {
			internalError(w)
			return
		}
		writeJSON(w, list)
	case k3smodel.SnapshotPrune, k3smodel.SnapshotDelete:
		writeStatus(w, http.StatusNotImplemented, metav1.StatusReasonMethodNotAllowed, "the simulator does not play etcd-snapshot "+sr.Operation)
	default:
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, errorID())
	}
}

// readSnapshotRequest reads a POSTed SnapshotRequest; k3s takes nothing but POST.
func readSnapshotRequest(r *http.Request) (k3smodel.SnapshotRequest, error) {
	var sr k3smodel.SnapshotRequest
	if r.Method != http.MethodPost {
		return sr, fmt.Errorf("method %s is not supported", r.Method)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return sr, err
	}
	return sr, json.Unmarshal(body, &sr)
}

// saveOnDemand is an on-demand save: the answering server's name and compression
// under the request's, the request's folder and S3 alone (k3smodel.SaveSettings), a
// snapshot as a scheduled one is taken. A save never prunes (the CLI sends
// retention 0).
func (c *workloadCluster) saveOnDemand(ctx context.Context, sr k3smodel.SnapshotRequest, now time.Time) (k3smodel.SnapshotResult, error) {
	c.mu.Lock()
	up := c.upMemberNamesLocked()
	cl := c.client
	var server *snapshotPlan
	if len(up) > 0 {
		server = c.serverSettings[up[0]]
	}
	c.mu.Unlock()
	if len(up) == 0 || cl == nil {
		return k3smodel.SnapshotResult{}, errors.New("no server runs etcd")
	}
	if server == nil {
		server = (&bootData{}).snapshotSettings()
	}
	set := k3smodel.SaveSettings(sr, k3smodel.SnapshotSettings{Name: server.name, Compress: server.compress})
	created, err := c.saveSnapshot(ctx, cl, up[0], set, now)
	return k3smodel.SnapshotResult{Created: created}, err
}

// listSnapshots is the list operation's answer, as k3s builds it from storage, not
// from its ETCDSnapshotFile records (pkg/etcd/snapshot.go ListSnapshots, v1.36.2;
// alike in v1.34.9 and v1.35.4): with the request's S3 block, the objects of its
// bucket under its folder (k3smodel.ListedS3Snapshots), then the files on the
// answering server's disk.
func (c *workloadCluster) listSnapshots(sr k3smodel.SnapshotRequest) (map[string]any, error) {
	items := []map[string]any{}
	if s3 := sr.S3; s3 != nil {
		items = append(items, k3smodel.ListedS3Snapshots(s3, s3.Endpoint, s3ListObjects(s3.Endpoint, s3.Bucket))...)
	}
	c.mu.Lock()
	up := c.upMemberNamesLocked()
	var local map[string]*snapshotData
	if len(up) > 0 {
		local = c.localSnapshots[up[0]]
	}
	c.mu.Unlock()
	if len(up) == 0 {
		return nil, errors.New("no server runs etcd")
	}
	for p, data := range local {
		annotations := map[string]any{}
		if data != nil && data.serverPass != "" {
			annotations[k3smodel.SnapshotTokenHashAnnotation] = k3smodel.TokenHash(data.serverPass)
		}
		items = append(items, map[string]any{
			"metadata": map[string]any{"labels": map[string]any{k3smodel.SnapshotStorageNodeLabel: up[0]}, "annotations": annotations},
			"spec":     map[string]any{"snapshotName": path.Base(p), "nodeName": up[0], "location": "file://" + p},
			"status":   map[string]any{"readyToUse": true},
		})
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, nil
}

// errorID is k3s's answer text for an error it only logs.
func errorID() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(99999))
	return fmt.Sprintf("etcd-snapshot error ID %05d", n.Int64())
}

func internalError(w http.ResponseWriter) {
	writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "Internal error occurred: "+errorID())
}

func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		internalError(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}
