// Package workload is the workload cluster as the control plane sees it. It reads
// only through CAPI's ClusterCache, which keeps one cached connection per cluster;
// nothing here builds a client of its own.
package workload
