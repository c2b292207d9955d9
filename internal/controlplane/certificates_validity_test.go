package controlplane

import (
	"context"
	"testing"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/secret"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// caNotAfter is when the CA in the Secret expires.
func caNotAfter(t *testing.T, ns, name string) time.Time {
	t.Helper()
	crt, err := certs.DecodeCertPEM(getSecret(t, ns, name).Data[secret.TLSCrtDataName])
	if err != nil {
		t.Fatal(err)
	}
	return crt.NotAfter
}

// A new cluster's CAs get caCertificateValidityPeriodDays, the CAs' dates are reported
// in status.certificates.authorities, and CAs that exist are left as they are.
func TestCACertificateValidityPeriodDaysTakesEffect(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		days int32
		want time.Duration
	}{
		{name: "set", days: 30, want: 30 * 24 * time.Hour},
		{name: "unset: as before", days: 0, want: controlplanev1.DefaultCACertificateValidityPeriodDays * 24 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.NewNamespace(t)
			cluster, kcp := createStepTestCluster(t, ns, clusterv1.APIEndpoint{})
			kcp.Spec.CACertificateValidityPeriodDays = tc.days
			r, _ := countingReconciler(t)
			before := time.Now()
			cas, err := r.reconcileCertificates(ctx, cluster, kcp, r.passSecrets(cluster), r.startedCheck(ctx, cluster, kcp))
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range caSecretNames() {
				got := caNotAfter(t, ns, name)
				if lo, hi := before.Add(tc.want-time.Hour), time.Now().Add(tc.want+time.Hour); got.Before(lo) || got.After(hi) {
					t.Errorf("%s expires at %s, want about %s from now", name, got, tc.want)
				}
			}
			seen := observed{authorities: caAuthorities(cas)}
			setCertificatesStatus(kcp, seen)
			if err := env.Client.Status().Update(ctx, kcp); err != nil {
				t.Fatal(err)
			}
			st := kcp.Status.Certificates
			if st == nil || len(st.Authorities) != len(caSecretNames()) {
				t.Fatalf("status.certificates = %+v, want the three CAs", st)
			}
			for _, a := range st.Authorities {
				if want := caNotAfter(t, ns, a.SecretName); !a.NotAfter.Time.Equal(want.Truncate(time.Second)) {
					t.Errorf("authority %s: notAfter %s, want %s", a.SecretName, a.NotAfter, want)
				}
			}

			// A later pass with another value (the webhook refuses that; a stored
			// object bypassing it) makes nothing new.
			first := caNotAfter(t, ns, caSecretNames()[0])
			kcp.Spec.CACertificateValidityPeriodDays = 1
			if _, err := r.reconcileCertificates(ctx, cluster, kcp, r.passSecrets(cluster), r.startedCheck(ctx, cluster, kcp)); err != nil {
				t.Fatal(err)
			}
			if got := caNotAfter(t, ns, caSecretNames()[0]); !got.Equal(first) {
				t.Errorf("an existing CA changed: %s, was %s", got, first)
			}
		})
	}
}
