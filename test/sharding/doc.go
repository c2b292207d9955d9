// Package sharding runs two shards of capk3s's managers side by side, each pair
// started with its own --watch-filter, the way CAPI spreads clusters over several
// managers. Each shard must bring up the cluster labelled for it and write nothing
// else: the management apiserver's audit log attributes every write to one manager
// process. A cluster without the label, or labelled for a shard that does not run,
// is left alone by both.
package sharding
