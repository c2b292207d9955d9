package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// cgroupParent is where every machine's cgroup lives, in each hierarchy.
const cgroupParent = "capk3s-realk3s"

// removeCgroups removes a machine's cgroups (all machines' with an empty name) in
// every hierarchy, deepest first: the kubelet and runc make their own under the
// machine's. A cgroup can only go once its processes are gone, which takes the
// kernel a moment after a kill.
func removeCgroups(name string) error {
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	var dirs []string
	for _, h := range hierarchies {
		root := filepath.Join(h, cgroupParent, name)
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	var errs []error
	for _, d := range dirs {
		var err error
		for range 50 {
			if err = os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
