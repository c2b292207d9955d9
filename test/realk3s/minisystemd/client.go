package minisystemd

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
)

// flagsWithValue are systemctl options whose value may be the next word;
// the value is skipped with the option. Only --signal/-s is used.
var flagsWithValue = map[string]bool{
	"-s": true, "--signal": true, "--kill-whom": true, "--kill-who": true,
	"-n": true, "--lines": true, "-p": true, "--property": true, "-t": true,
	"--type": true, "--state": true, "-H": true, "--host": true, "-M": true,
	"--machine": true, "-o": true, "--output": true, "--root": true, "--job-mode": true,
}

// parseSystemctl turns systemctl's arguments into a request. Options it does
// not know are ignored; quiet reports whether stdout is to be suppressed.
func parseSystemctl(args []string) (req request, quiet bool, err error) {
	var words []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			words = append(words, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			words = append(words, a)
			continue
		}
		name, value, hasValue := strings.Cut(a, "=")
		if !hasValue && flagsWithValue[name] && i+1 < len(args) {
			i++
			value = args[i]
		}
		switch name {
		case "--now":
			req.Now = true
		case "-q", "--quiet":
			quiet = true
		case "-s", "--signal":
			req.Signal = value
		}
	}
	if len(words) == 0 {
		return req, quiet, fmt.Errorf("no verb given (listing units is not implemented)")
	}
	req.Verb, req.Units = words[0], words[1:]
	return req, quiet, nil
}

// systemctlMain is the systemctl client. It returns the exit status.
func systemctlMain(args []string, stdout, stderr io.Writer) int {
	for _, a := range args {
		if a == "--version" || a == "-h" || a == "--help" {
			_, _ = fmt.Fprintln(stdout, "systemctl (minisystemd stand-in): talks to the minisystemd supervisor")
			return 0
		}
	}
	req, quiet, err := parseSystemctl(args)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "systemctl (minisystemd): %v\n", err)
		return exitFailure
	}
	sock := ConfigFromEnv().Socket
	conn, err := net.Dial("unix", sock)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "systemctl (minisystemd): the supervisor is not reachable at %s: %v\n", sock, err)
		return exitFailure
	}
	defer func() { _ = conn.Close() }()
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		_, _ = fmt.Fprintf(stderr, "systemctl (minisystemd): sending request: %v\n", err)
		return exitFailure
	}
	var resp response
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		_, _ = fmt.Fprintf(stderr, "systemctl (minisystemd): reading reply: %v\n", err)
		return exitFailure
	}
	if !quiet {
		_, _ = fmt.Fprint(stdout, resp.Stdout)
	}
	_, _ = fmt.Fprint(stderr, resp.Stderr)
	return resp.Code
}
