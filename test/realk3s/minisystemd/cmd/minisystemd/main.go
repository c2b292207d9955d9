// Command minisystemd is the service supervisor and systemctl stand-in of
// the real-k3s test machines; see package minisystemd.
package main

import (
	"os"

	"github.com/capk3s/capk3s/test/realk3s/minisystemd"
)

func main() {
	os.Exit(minisystemd.Main(os.Args))
}
