package envtest_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/test/envtest"
)

const workloadClusterName = "workload"

// clientCA is the purpose, and Secret name suffix, of k3s's client CA.
const clientCAPurpose secret.Purpose = "cca"

// newCAs generates a k3s cluster's two CAs the way the control plane does.
func newCAs(t *testing.T) (serverCA, clientCA *secret.Certificate) {
	t.Helper()
	cas := secret.Certificates{{Purpose: secret.ClusterCA}, {Purpose: clientCAPurpose}}
	if err := cas.Generate(); err != nil {
		t.Fatal(err)
	}
	return cas.GetByPurpose(secret.ClusterCA), cas.GetByPurpose(clientCAPurpose)
}

// controlPlaneKubeconfig builds a kubeconfig as the control plane will: a client
// certificate signed by signer, and trust in trusted (the server CA, when correct).
func controlPlaneKubeconfig(t *testing.T, endpoint string, signer, trusted *secret.Certificate) *rest.Config {
	t.Helper()
	caCert, err := certs.DecodeCertPEM(signer.KeyPair.Cert)
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := certs.DecodePrivateKeyPEM(signer.KeyPair.Key)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := kubeconfig.New(workloadClusterName, endpoint, caCert, caKey)
	if err != nil {
		t.Fatal(err)
	}
	// kubeconfig.New trusts the signing CA, which is right for kubeadm's single CA;
	// k3s serves with the other one.
	cfg.Clusters[workloadClusterName].CertificateAuthorityData = trusted.KeyPair.Cert
	return restConfig(t, cfg)
}

// restConfig goes through the serialised form, as a kubeconfig Secret's reader does.
func restConfig(t *testing.T, cfg *clientcmdapi.Config) *rest.Config {
	t.Helper()
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	// Failures are the point of some checks: fail once rather than retrying.
	rc.Timeout = 10 * time.Second
	return rc
}

func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWorkloadAPIServer(t *testing.T) {
	ctx := context.Background()
	serverCA, clientCA := newCAs(t)

	start := time.Now()
	w, err := envtest.StartWorkloadAPIServer(serverCA.KeyPair.Cert, serverCA.KeyPair.Key, clientCA.KeyPair.Cert)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("workload apiserver (with etcd) ready at %s in %s", w.Endpoint(), time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { _ = w.Stop() })

	if want := "https://127.0.0.1:" + strconv.Itoa(w.Port); w.Endpoint() != want {
		t.Errorf("Endpoint() = %q, want %q", w.Endpoint(), want)
	}

	t.Run("control plane kubeconfig creates and lists nodes", func(t *testing.T) {
		c := newClient(t, controlPlaneKubeconfig(t, w.Endpoint(), clientCA, serverCA))
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "server-0"}}
		if err := c.Create(ctx, node); err != nil {
			t.Fatalf("creating a Node: %v", err)
		}
		nodes := &corev1.NodeList{}
		if err := c.List(ctx, nodes); err != nil {
			t.Fatalf("listing Nodes: %v", err)
		}
		if len(nodes.Items) != 1 || nodes.Items[0].Name != node.Name {
			t.Errorf("listed %d nodes %v, want only %s", len(nodes.Items), nodes.Items, node.Name)
		}
	})

	t.Run("serving certificate names localhost", func(t *testing.T) {
		endpoint := "https://" + net.JoinHostPort("localhost", strconv.Itoa(w.Port))
		c := newClient(t, controlPlaneKubeconfig(t, endpoint, clientCA, serverCA))
		if err := c.List(ctx, &corev1.NodeList{}); err != nil {
			t.Fatalf("listing Nodes through %s: %v", endpoint, err)
		}
	})

	t.Run("AdminConfig is an admin", func(t *testing.T) {
		cfg, err := w.AdminConfig(clientCA.KeyPair.Cert, clientCA.KeyPair.Key)
		if err != nil {
			t.Fatal(err)
		}
		c := newClient(t, cfg)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "agent-0"}}
		if err := c.Create(ctx, node); err != nil {
			t.Fatalf("creating a Node: %v", err)
		}
		if err := c.Delete(ctx, node); err != nil {
			t.Fatalf("deleting a Node: %v", err)
		}
	})

	t.Run("client certificate signed by the server CA is rejected", func(t *testing.T) {
		c := newClient(t, controlPlaneKubeconfig(t, w.Endpoint(), serverCA, serverCA))
		err := c.List(ctx, &corev1.NodeList{})
		if !apierrors.IsUnauthorized(err) {
			t.Fatalf("listing Nodes with a certificate of the wrong CA: got %v, want Unauthorized", err)
		}
	})

	t.Run("client trusting another CA rejects the server", func(t *testing.T) {
		otherCA, _ := newCAs(t)
		c := newClient(t, controlPlaneKubeconfig(t, w.Endpoint(), clientCA, otherCA))
		err := c.List(ctx, &corev1.NodeList{})
		if _, ok := errors.AsType[x509.UnknownAuthorityError](err); !ok {
			t.Fatalf("listing Nodes trusting another CA: got %v, want x509.UnknownAuthorityError", err)
		}
	})

	t.Run("Stop ends the apiserver", func(t *testing.T) {
		start := time.Now()
		if err := w.Stop(); err != nil {
			t.Fatal(err)
		}
		t.Logf("stopped in %s", time.Since(start).Round(time.Millisecond))
		// Stop waits for the process to exit, so the port is closed at once.
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(w.Host, strconv.Itoa(w.Port)), time.Second)
		if err == nil {
			_ = conn.Close()
			t.Fatalf("%s still accepts connections after Stop", w.Endpoint())
		}
		if err := w.Stop(); err != nil {
			t.Errorf("second Stop: %v", err)
		}
	})
}

func TestWorkloadAPIServerRejectsBadCA(t *testing.T) {
	serverCA, _ := newCAs(t)
	if w, err := envtest.StartWorkloadAPIServer(serverCA.KeyPair.Cert, serverCA.KeyPair.Key, []byte("not PEM")); err == nil {
		_ = w.Stop()
		t.Fatal("started with a client CA that is not PEM")
	}
}
