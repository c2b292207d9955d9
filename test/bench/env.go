package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeadmbootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	infrav1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	capk3senv "github.com/capk3s/capk3s/test/envtest"
)

// benchScheme is the harness's scheme (Kubernetes, CAPI core, capk3s) plus the kubeadm
// providers' and the in-memory backend's kinds.
func benchScheme() *runtime.Scheme {
	s := capk3senv.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		kubeadmbootstrapv1.AddToScheme,
		kubeadmcontrolplanev1.AddToScheme,
		infrav1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// startEnvironment starts the tests' control plane (kube-apiserver, etcd, CAPI core's
// and capk3s's CRDs) and installs the CRDs of the kubeadm providers and of the
// in-memory backend from the module cache, at the versions this module pins.
func startEnvironment() (*capk3senv.Environment, error) {
	env, err := capk3senv.Start(capk3senv.Options{})
	if err != nil {
		return nil, err
	}
	capi, err := moduleDir("sigs.k8s.io/cluster-api")
	if err != nil {
		return nil, stopAfter(env, err)
	}
	capiTest, err := moduleDir("sigs.k8s.io/cluster-api/test")
	if err != nil {
		return nil, stopAfter(env, err)
	}
	paths := []string{
		filepath.Join(capi, "bootstrap", "kubeadm", "config", "crd", "bases"),
		filepath.Join(capi, "controlplane", "kubeadm", "config", "crd", "bases"),
		filepath.Join(capiTest, "infrastructure", "docker", "config", "crd", "bases"),
	}
	crds, err := readCRDs(paths)
	if err != nil {
		return nil, stopAfter(env, err)
	}
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		return nil, stopAfter(env, fmt.Errorf("installing the kubeadm providers' and in-memory backend's CRDs: %w", err))
	}
	return env, nil
}

// readCRDs reads every CRD in dirs and gives it CAPI's contract label. The CRD bases
// in the module cache are as controller-gen wrote them; the label, which CAPI core
// needs to read the objects at their contract version, comes from each project's
// kustomization, which is not applied here.
func readCRDs(dirs []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no CRDs in %s", dir)
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(raw, crd); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if crd.Labels == nil {
				crd.Labels = map[string]string{}
			}
			crd.Labels[clusterv1.GroupVersion.Group+"/"+clusterv1.GroupVersion.Version] = clusterv1.GroupVersion.Version
			out = append(out, crd)
		}
	}
	return out, nil
}

func stopAfter(env *capk3senv.Environment, err error) error {
	if stopErr := env.Stop(); stopErr != nil {
		return errors.Join(err, fmt.Errorf("stopping the control plane: %w", stopErr))
	}
	return err
}

// moduleDir is where the module cache holds mod at the version this module pins. The
// benchmark runs with `go run` from its module directory, so the go command is there.
func moduleDir(mod string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mod).Output()
	if err != nil {
		return "", fmt.Errorf("locating %s in the module cache (run from test/bench): %w", mod, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// apiserverRSS is the resident memory of the kube-apiserver this process started, in
// bytes, read from /proc; 0 when it cannot be found (not Linux, say).
func apiserverRSS() int64 {
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		fields := procStatus(string(status))
		if fields["Name"] != "kube-apiserver" || fields["PPid"] != strconv.Itoa(self) {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(fields["VmRSS"], " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// procStatus parses /proc/<pid>/status into its "Key:\tvalue" pairs.
func procStatus(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}
