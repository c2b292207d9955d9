package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// kernelSettings are the host-wide settings a kubelet or kube-proxy writes
// (kubelet's kernel tunables and kube-proxy's conntrack table size): none of them is
// namespaced, so a machine's kubelet changes the host that runs the tests.
var kernelSettings = []string{
	"kernel/panic",
	"kernel/panic_on_oops",
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
	"net/netfilter/nf_conntrack_max",
}

const savedKernelFile = "kernel-settings.json"

// saveKernelSettings records the current values in dir, unless a record is already
// there: that one was made by a run that never put them back, and holds the values
// from before any kubelet ran.
func saveKernelSettings(dir string) error {
	path := filepath.Join(dir, savedKernelFile)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	saved := map[string]string{}
	for _, k := range kernelSettings {
		v, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", k, err)
		}
		saved[k] = strings.TrimSpace(string(v))
	}
	b, err := json.Marshal(saved)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// RestoreKernelSettings puts back the values saveKernelSettings recorded in dir and
// removes the record. Without a record it does nothing.
func RestoreKernelSettings(dir string) error {
	path := filepath.Join(dir, savedKernelFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	saved := map[string]string{}
	if err := json.Unmarshal(b, &saved); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var errs []error
	for k, v := range saved {
		if err := os.WriteFile(filepath.Join("/proc/sys", k), []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s=%s: %w", k, v, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return os.Remove(path)
}

// KernelSettings reads the settings a kubelet changes, for a test that checks the
// layer put them back.
func KernelSettings() (map[string]string, error) {
	now := map[string]string{}
	for _, k := range kernelSettings {
		v, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		now[k] = strings.TrimSpace(string(v))
	}
	return now, nil
}
