// Package k3s holds facts about k3s that both providers rely on: how its versions
// are written and compared, and where it reads its files.
package k3s
