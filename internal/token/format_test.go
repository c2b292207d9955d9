package token_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/capk3s/capk3s/internal/token"
)

// A Token that reaches a log line, an error or an event by mistake must not show the
// passphrases, whatever verb formats it, directly or inside another value. (Two
// cases no method can cover are left out: %p of a non-pointer, which go vet reports,
// and a Token in an unexported field, whose methods fmt cannot call.)
func TestTokenFormattingNeverShowsPassphrases(t *testing.T) {
	tok := token.Token{Server: "s3rv3r-secret-passphrase", Agent: "4g3nt-secret-passphrase"}
	ptr := &tok
	type wrapper struct{ T token.Token }
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%t", "%o", "%c", "%U", "%e", "%10.3s", "%-40v"} {
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
	for name, got := range map[string]string{
		"Sprint":      fmt.Sprint(tok),
		"Sprintf %v":  fmt.Sprintf("%v", tok),
		"Sprintf %d":  fmt.Sprintf("%d", tok),
		"Sprintf %#v": fmt.Sprintf("%#v", tok),
		"Errorf %v":   fmt.Errorf("wrapping %v", tok).Error(),
	} {
		if !strings.Contains(got, "token(redacted)") {
			t.Errorf("%s printed %q, want the redacted form token(redacted)", name, got)
		}
	}
}
