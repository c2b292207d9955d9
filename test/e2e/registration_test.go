package e2e

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// registration waits for the control plane to publish the server joiners are sent to.
func (s *scenario) registration() controlplanev1.RegistrationStatus {
	s.t.Helper()
	var got controlplanev1.RegistrationStatus
	s.eventually("the control plane to publish its registration server", func(ctx context.Context) (bool, string, error) {
		kcp := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.objs.ControlPlane), kcp); err != nil {
			return false, "", err
		}
		if kcp.Status.Registration == nil {
			return false, "no status.registration", nil
		}
		got = *kcp.Status.Registration
		return s.serverNames().Has(got.Machine), fmt.Sprintf("registration %+v", got), nil
	})
	return got
}

var serverURL = regexp.MustCompile(`(?m)^\s*server: "?(https://[^"\s]+)`)

// checkJoinURLs: every joiner's bootstrap data names a server's own address, never
// the control-plane endpoint.
func (s *scenario) checkJoinURLs() {
	s.t.Helper()
	ep := s.objs.Cluster.Spec.ControlPlaneEndpoint
	endpoint := "https://" + net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	configs := &bootstrapv1.KThreesConfigList{}
	s.must("listing KThreesConfigs", env.Client.List(s.ctx, configs, client.InNamespace(s.ns)))
	joiners := 0
	for _, c := range configs.Items {
		if c.Status.DataSecretName == "" {
			continue
		}
		data := &corev1.Secret{}
		s.must("reading bootstrap data", env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: c.Status.DataSecretName}, data))
		m := serverURL.FindStringSubmatch(string(data.Data["value"]))
		if m == nil {
			continue // the first server starts the cluster
		}
		joiners++
		if m[1] == endpoint {
			s.t.Errorf("KThreesConfig %s joins through the endpoint %s, want a server's address", c.Name, m[1])
		}
	}
	if joiners == 0 {
		s.t.Error("no joiner's bootstrap data names a server URL")
	}
}
