package token_test

import (
	"encoding/hex"
	"testing"

	"github.com/capk3s/capk3s/internal/token"
)

func TestGenerate(t *testing.T) {
	a, err := token.Generate()
	if err != nil {
		t.Fatal(err)
	}
	b, err := token.Generate()
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]string{"first server": a.Server, "first agent": a.Agent, "second server": b.Server, "second agent": b.Agent} {
		// At least 128 bits: 32 hex characters. (Generate makes 256 bits, 64 characters.)
		if len(p) < 32 {
			t.Errorf("%s passphrase has %d characters, want at least 32", name, len(p))
		}
		if _, err := hex.DecodeString(p); err != nil {
			t.Errorf("%s passphrase is not hex: %v", name, err)
		}
	}
	if a.Server == b.Server || a.Agent == b.Agent {
		t.Error("two calls to Generate returned the same passphrase")
	}
	if a.Server == a.Agent || b.Server == b.Agent {
		t.Error("Generate returned the same passphrase for server and agent")
	}
	if !a.HasAgentToken() {
		t.Error("a generated token has no agent passphrase")
	}
}
