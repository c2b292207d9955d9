package imagebuild

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// source is the commit an image is built from.
type source struct {
	revision   string
	commitTime time.Time
}

// readSource asks git for HEAD of the checkout at root: the revision label and the
// time every file and the image config carry.
func readSource(root string) (source, error) {
	out, err := gitOutput(root, "show", "-s", "--format=%H %ct", "HEAD")
	if err != nil {
		return source{}, err
	}
	revision, epoch, ok := strings.Cut(out, " ")
	if !ok {
		return source{}, fmt.Errorf("unexpected git output %q", out)
	}
	seconds, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return source{}, fmt.Errorf("commit time %q: %w", epoch, err)
	}
	return source{revision: revision, commitTime: time.Unix(seconds, 0).UTC()}, nil
}

func gitOutput(root string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		return "", fmt.Errorf("git %s in %s: %w %s", strings.Join(args, " "), root, err, stderr)
	}
	return strings.TrimSpace(string(out)), nil
}
