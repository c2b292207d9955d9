package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entry is one file or directory of a layer.
type entry struct {
	path     string // absolute, e.g. /etc/passwd; a directory ends in /
	mode     int64
	uid, gid int
	data     []byte
}

// base is what every image shares below its binary: users and the CA bundle.
type base struct {
	layer    v1.Layer
	caBundle []byte
}

// newBaseLayer makes the layer every image starts from, instead of a base image from
// a registry: /etc/passwd and /etc/group with root and the nonroot user, its home,
// a world-writable /tmp, and the build machine's CA bundle.
func newBaseLayer(opts Options) (base, error) {
	bundle, err := os.ReadFile(opts.CABundle)
	if err != nil {
		return base{}, fmt.Errorf("reading the CA bundle (Debian's ca-certificates package; hack/ensure-ca-certificates.sh installs it): %w", err)
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, GID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)
	layer, err := newLayer(opts.Created, []entry{
		{path: "/etc/passwd", mode: 0o644, data: []byte(passwd)},
		{path: "/etc/group", mode: 0o644, data: []byte(group)},
		{path: CABundlePath, mode: 0o644, data: bundle},
		{path: "/home/nonroot/", mode: 0o700, uid: UID, gid: GID},
		{path: "/tmp/", mode: 0o1777},
	})
	if err != nil {
		return base{}, fmt.Errorf("the base layer: %w", err)
	}
	return base{layer: layer, caBundle: bundle}, nil
}

// newBinaryLayer holds the manager binary at EntrypointPath.
func newBinaryLayer(created time.Time, binary []byte) (v1.Layer, error) {
	return newLayer(created, []entry{{path: EntrypointPath, mode: 0o755, data: binary}})
}

// newLayer writes entries, with their parent directories, as a gzipped tar in which
// nothing depends on the build machine: sorted paths, one modification time, numeric
// owners without names, and a gzip header without a time or name.
func newLayer(modTime time.Time, entries []entry) (v1.Layer, error) {
	entries = withParents(entries)
	sort.Slice(entries, func(i, j int) bool { return entries[i].path < entries[j].path })

	var compressed bytes.Buffer
	zw, err := gzip.NewWriterLevel(&compressed, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:    strings.TrimPrefix(e.path, "/"),
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: modTime,
			Format:  tar.FormatPAX,
		}
		if strings.HasSuffix(e.path, "/") {
			hdr.Typeflag = tar.TypeDir
		} else {
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing %s: %w", e.path, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("writing %s: %w", e.path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	data := compressed.Bytes()
	// Given gzip data, go-containerregistry takes it as the layer's blob unchanged.
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// withParents adds a root-owned 0755 directory entry for every parent that entries
// do not list themselves, so that runtimes create no directory with arbitrary metadata.
func withParents(entries []entry) []entry {
	listed := map[string]bool{}
	for _, e := range entries {
		listed[e.path] = true
	}
	out := append([]entry(nil), entries...)
	for _, e := range entries {
		for dir := path.Dir(strings.TrimSuffix(e.path, "/")); dir != "/"; dir = path.Dir(dir) {
			if !listed[dir+"/"] {
				listed[dir+"/"] = true
				out = append(out, entry{path: dir + "/", mode: 0o755})
			}
		}
	}
	return out
}
