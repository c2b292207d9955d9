// Package lb is the TCP load balancer that serves a real-k3s test cluster's
// control-plane endpoint.
//
// In the real-k3s layer every workload cluster's controlPlaneEndpoint is an address on
// the host side of the machines' bridge, while its k3s servers listen on 6443 at their
// own machine addresses and come and go during rolling upgrades and remediation. Like
// the haproxy container CAPD puts in front of its control planes, this balancer keeps
// one stable endpoint for kubelets, agents joining and the management controllers, and
// forwards each connection to a live server. It runs in the test process (no haproxy
// on these machines) and forwards plain TCP, so the apiserver's TLS stays end to end.
//
// A backend that refuses a connection, or fails the periodic TCP check, is skipped for
// a while; a backend removed from the set has its open connections closed, so clients
// reconnect to a server that is still there instead of holding a connection to one
// that is going away.
package lb
