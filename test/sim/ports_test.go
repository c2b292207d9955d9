package sim

import (
	"net"
	"strconv"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// An endpoint's port must lie outside the kernel's ephemeral range, where the ports
// handed out for ":0" and for outgoing connections come from: otherwise another
// socket can take it between its release and the workload API's bind.
func TestEndpointPortsAvoidTheEphemeralRange(t *testing.T) {
	p := &Provider{reserved: map[client.ObjectKey]net.Listener{}}
	t.Cleanup(func() {
		for key := range p.reserved {
			p.releasePort(key)
		}
	})
	high := ephemeralPortLow()
	if high-endpointPortLow < 1000 {
		t.Skipf("the ephemeral range starts at %d: no room below it on this machine", high)
	}
	seen := map[int]string{}
	for i := range 20 {
		key := client.ObjectKey{Namespace: "ns", Name: "c" + strconv.Itoa(i)}
		port, err := p.reservePort(key)
		if err != nil {
			t.Fatal(err)
		}
		if port < endpointPortLow || port >= high {
			t.Errorf("cluster %s got port %d, want one in [%d, %d)", key.Name, port, endpointPortLow, high)
		}
		if other, ok := seen[port]; ok {
			t.Errorf("clusters %s and %s share port %d", other, key.Name, port)
		}
		seen[port] = key.Name
		again, err := p.reservePort(key)
		if err != nil || again != port {
			t.Errorf("cluster %s asked again got port %d (%v), want %d", key.Name, again, err, port)
		}
	}

	key := client.ObjectKey{Namespace: "ns", Name: "c0"}
	port, _ := p.reservePort(key)
	p.releasePort(key)
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("port %d not free after its release: %v", port, err)
	}
	_ = l.Close()
}
