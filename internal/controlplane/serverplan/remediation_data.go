package serverplan

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

const (
	// RemediationInProgressAnnotation is on the KThreesControlPlane from the deletion
	// of an unhealthy server until its replacement is created; its value is the
	// RemediationData that the replacement must carry.
	RemediationInProgressAnnotation = "controlplane.cluster.x-k8s.io/remediation-in-progress"
	// RemediationForAnnotation is on a replacement Machine; its value is the
	// RemediationData of the remediation that created it.
	RemediationForAnnotation = "controlplane.cluster.x-k8s.io/remediation-for"
)

// RemediationData is the value of both annotations. Its JSON is KCP's, so that tools
// that read KCP's annotations read these too.
type RemediationData struct {
	// Machine is the name of the remediated (deleted) Machine.
	Machine string `json:"machine"`
	// Timestamp is when it was deleted.
	Timestamp metav1.Time `json:"timestamp"`
	// RetryCount counts the remediations of the same original failure before this one.
	RetryCount int32 `json:"retryCount"`
}

// Marshal is the annotations' value for d.
func (d RemediationData) Marshal() (string, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("encoding remediation data: %w", err)
	}
	return string(b), nil
}

// ParseRemediationData reads an annotation's value.
func ParseRemediationData(value string) (*RemediationData, error) {
	d := &RemediationData{}
	if err := json.Unmarshal([]byte(value), d); err != nil {
		return nil, fmt.Errorf("decoding remediation data %q: %w", value, err)
	}
	return d, nil
}

// RemediationFor returns the annotation that a server created now must carry because
// it replaces a remediated one, and whether one is due (the kcp carries the
// in-progress annotation). The caller, once the Machine is created, must remove the
// in-progress annotation from the kcp: the remediation is then complete.
func RemediationFor(kcp *controlplanev1.KThreesControlPlane) (key, value string, ok bool) {
	value, ok = kcp.Annotations[RemediationInProgressAnnotation]
	if !ok {
		return "", "", false
	}
	return RemediationForAnnotation, value, true
}
