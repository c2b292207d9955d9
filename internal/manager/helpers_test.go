package manager

import (
	"testing"

	"github.com/spf13/pflag"
)

// parse registers the flags on a fresh flag set, as the mains do, and parses args.
func parse(t *testing.T, args ...string) Options {
	t.Helper()
	var o Options
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %v: %v", args, err)
	}
	return o
}
