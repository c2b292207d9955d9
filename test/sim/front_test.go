package sim

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestWatchThroughTheEndpoint: a watch through the front streams each event as it
// happens.
func TestWatchThroughTheEndpoint(t *testing.T) {
	t.Parallel()
	wc := startDRCluster(t, firstServer(t, drServerPass, "", "watch"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(endpointConfig(wc))
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, marker("watched"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev := <-w.ResultChan():
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type == watch.Added && cm.Name == "watched" {
				return
			}
		case <-ctx.Done():
			t.Fatal("no event for the ConfigMap through the endpoint")
		}
	}
}

// BenchmarkEndpoint compares a GET straight to the apiserver (what the endpoint was
// before the front) with one through the front.
func BenchmarkEndpoint(b *testing.B) {
	wc := startDRCluster(b, firstServer(b, drServerPass, "", "bench"))
	ctx := context.Background()
	// No client-side rate limit: it would be all that is measured.
	directCfg, frontCfg := rest.CopyConfig(wc.config), endpointConfig(wc)
	directCfg.QPS, frontCfg.QPS = -1, -1
	direct, err := client.New(directCfg, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	viaFront, err := client.New(frontCfg, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := direct.Create(ctx, marker("bench")); err != nil {
		b.Fatal(err)
	}
	for name, cl := range map[string]client.Client{"apiserver": direct, "front": viaFront} {
		b.Run(name, func(b *testing.B) {
			cm := &corev1.ConfigMap{}
			for b.Loop() {
				if err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "bench"}, cm); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
