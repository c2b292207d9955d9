package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// A SimCluster's endpoint is published before its workload API starts, so its port is
// held by a listener until then and released just before kube-apiserver binds it. In
// that gap any other socket could take the port: a port the kernel hands out for
// ":0" (every other apiserver, etcd and test helper here asks for one that way) or for
// an outgoing connection. Both come from the kernel's ephemeral range, so endpoints
// are picked below it, where only another endpoint reservation ever binds.

const (
	// endpointPortLow is the lowest endpoint port: above the ports services keep for
	// themselves (PostgreSQL's 5432, registries' 5000, ...).
	endpointPortLow = 20000
	// endpointPortTries bounds the random picks before giving up.
	endpointPortTries = 200
	// defaultEphemeralLow is Linux's default start of the ephemeral range.
	defaultEphemeralLow = 32768
)

// ephemeralPortLow reads the start of the kernel's ephemeral port range.
func ephemeralPortLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultEphemeralLow
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return defaultEphemeralLow
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return defaultEphemeralLow
	}
	return low
}

// listenForEndpoint holds a port on 127.0.0.1 outside the ephemeral range. When that
// range leaves no room below it, it falls back to a port the kernel picks.
func listenForEndpoint() (net.Listener, error) {
	high := ephemeralPortLow()
	if high-endpointPortLow < 1000 {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	var errs []error
	for range endpointPortTries {
		port := endpointPortLow + rand.IntN(high-endpointPortLow)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			return l, nil
		}
		if len(errs) < 3 {
			errs = append(errs, err)
		}
	}
	return nil, fmt.Errorf("no free port in %d-%d after %d tries: %w", endpointPortLow, high-1, endpointPortTries, errors.Join(errs...))
}
