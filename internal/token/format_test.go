package token_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/capk3s/capk3s/internal/token"
)

// A Token that reaches a log line, an error or an event by mistake must not show the
// passphrases, whatever verb formats it, directly or inside another value.
func TestTokenFormattingNeverShowsPassphrases(t *testing.T) {
	tok := token.Token{Server: "s3rv3r-secret-passphrase", Agent: "4g3nt-secret-passphrase"}
	ptr := &tok
	type wrapper struct{ T token.Token }
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X"} {
		for name, arg := range map[string]any{
			"value":   tok,
			"pointer": ptr,
			"slice":   []token.Token{tok},
			"struct":  wrapper{T: tok},
			"map":     map[string]token.Token{"k": tok},
		} {
			out := fmt.Sprintf(format, arg)
			for _, secret := range []string{tok.Server, tok.Agent} {
				// %x and %X would print the passphrase hex-encoded.
				for _, encoded := range []string{secret, fmt.Sprintf("%x", secret), fmt.Sprintf("%X", secret)} {
					if strings.Contains(out, encoded) {
						t.Errorf("Sprintf(%q, %s) = %q shows a passphrase", format, name, out)
					}
				}
			}
		}
	}
	if got := fmt.Sprint(tok); got != "token(redacted)" {
		t.Errorf("fmt.Sprint(tok) = %q, want token(redacted)", got)
	}
}
