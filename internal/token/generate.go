package token

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// passphraseBytes is 256 bits of randomness, hex encoded to 64 characters: k3s
// accepts any string, and hex needs no escaping in YAML or shell.
const passphraseBytes = 32

// Generate makes a new pair of passphrases from crypto/rand.
func Generate() (Token, error) {
	server, err := randomHex()
	if err != nil {
		return Token{}, err
	}
	agent, err := randomHex()
	if err != nil {
		return Token{}, err
	}
	return Token{Server: server, Agent: agent}, nil
}

func randomHex() (string, error) {
	b := make([]byte, passphraseBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return hex.EncodeToString(b), nil
}
