// Package provider is the real-k3s layer's infrastructure provider: it turns
// NetnsMachines into machines of test/realk3s/host booted from their Machine's
// bootstrap data, and NetnsClusters into a load balancer (test/realk3s/lb) in front
// of the cluster's servers. It also does what a cloud's controller manager does for a
// cluster whose k3s runs with the cloud controller disabled: it sets each Node's
// providerID and addresses and removes the uninitialized taint, so that Cluster API
// can match Nodes to Machines.
package provider
