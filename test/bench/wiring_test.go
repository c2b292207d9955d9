package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// One entry per kind: with two for Secrets, the cache applied one of them at random
// per process, and when it was CAPI's, the kubeadm control plane's CAs had no data.
func TestTheManagerCacheHasOneSecretEntryThatKeepsTheClusterCAs(t *testing.T) {
	opts := cacheOptions(benchScheme(), time.Minute)
	var entries int
	for obj, by := range opts.ByObject {
		if _, ok := obj.(*corev1.Secret); !ok {
			continue
		}
		entries++
		for name, keep := range map[string]bool{"c0000-ca": true, "c0000-etcd": true, "c0000-kubeconfig": true, "c0000-md-abcde": false} {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"tls.crt": []byte("x")}}
			out, err := by.Transform(s)
			if err != nil {
				t.Fatal(err)
			}
			if kept := out.(*corev1.Secret).Data != nil; kept != keep {
				t.Errorf("Secret %s: data kept %t, want %t", name, kept, keep)
			}
		}
	}
	if entries != 1 {
		t.Errorf("%d cache entries for Secrets, want 1", entries)
	}
}
