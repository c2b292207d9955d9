package sim

import (
	"errors"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// imageFolders are folders every Linux image has; the simulator does not see the
// image, so a snapshot folder among these (or under none of the data's) is not
// taken as made.
var imageFolders = []string{"/", "/etc", "/home", "/mnt", "/opt", "/root", "/run", "/srv", "/tmp", "/usr", "/var", "/var/lib"}

// madeFolders are the folders a machine has once its data ran up to k3s: the image's
// common ones, the folders of every file it writes (cloud-init and Ignition create
// them), its mount points (cloud-init's mounts and Ignition's mount units create
// them), and the folders `mkdir` creates in its commands (with -p, their parents
// too). It is what k3s finds when it needs a snapshot folder it does not create
// itself (k3smodel.SnapshotDir).
func (b *bootData) madeFolders() map[string]bool {
	made := map[string]bool{}
	addAll := func(dir string) {
		for d := path.Clean(dir); !made[d]; d = path.Dir(d) {
			made[d] = true
		}
	}
	for _, d := range imageFolders {
		made[d] = true
	}
	for p := range b.files {
		addAll(path.Dir(p))
	}
	for _, m := range b.os.mounts {
		if path.IsAbs(m.where) {
			addAll(m.where)
		}
	}
	for _, c := range b.commands {
		for _, d := range mkdirFolders(c) {
			addAll(d)
		}
	}
	return made
}

// mkdirFolders are the folders the mkdir calls in a shell command create. Options
// (-p, -m MODE, -m0700, --mode=MODE, -pm MODE) are skipped; a folder given by a
// variable or a substitution is not known and left out.
func mkdirFolders(cmd string) []string {
	f, err := syntax.NewParser().Parse(strings.NewReader(cmd), "")
	if err != nil {
		return nil
	}
	var dirs []string
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) < 2 || literal(call.Args[0]) != "mkdir" {
			return true
		}
		args := call.Args[1:]
		for i := 0; i < len(args); i++ {
			a := literal(args[i])
			switch {
			case a == "--":
				for _, rest := range args[i+1:] {
					if d := literal(rest); path.IsAbs(d) {
						dirs = append(dirs, d)
					}
				}
				return true
			case a == "--mode":
				i++
			case strings.HasPrefix(a, "--"):
			case strings.HasPrefix(a, "-") && len(a) > 1:
				// A short -m takes the next word unless the mode is in this one.
				if j := strings.IndexByte(a, 'm'); j == len(a)-1 {
					i++
				}
			case path.IsAbs(a):
				dirs = append(dirs, a)
			}
		}
		return true
	})
	return dirs
}

// snapshotDirError is a save that k3s refused before it began: the snapshot folder
// does not exist (k3smodel.SnapshotDir). A scheduled save then only logs it
// ("Failed to take scheduled snapshot", pkg/etcd/snapshot.go setSnapshotFunction;
// v1.34.9, v1.35.4, v1.36.2) and records nothing.
type snapshotDirError struct{ err error }

func (e *snapshotDirError) Error() string { return "failed to get etcd-snapshot-dir: " + e.err.Error() }
func (e *snapshotDirError) Unwrap() error { return e.err }

func isSnapshotDirError(err error) bool {
	var d *snapshotDirError
	return errors.As(err, &d)
}
