package cloudinit

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
)

func TestZZDumpForPython(t *testing.T) {
	dir := os.Getenv("PYDUMP")
	if dir == "" {
		t.Skip()
	}
	r := rand.New(rand.NewPCG(7, 7))
	roles := []Role{ServerInit, ServerJoin, Agent}
	n := 0
	dump := func(in Input) {
		out, err := Render(in)
		if err != nil {
			t.Fatal(err)
		}
		p := parse(t, out)
		j, _ := json.Marshal(p)
		os.WriteFile(fmt.Sprintf("%s/%04d.yaml", dir, n), out, 0o644)
		os.WriteFile(fmt.Sprintf("%s/%04d.json", dir, n), j, 0o644)
		n++
	}
	for _, tc := range goldenCases() {
		dump(tc.in)
	}
	for i := range 3000 {
		in := minimal(roles[r.IntN(3)])
		for j := range r.IntN(6) {
			fc := encodedFile(t, randPath(r, fmt.Sprintf("/r%d/%d", i, j)), encodings[r.IntN(4)], []byte(randText(r, true)))
			fc.in.Owner = randText(r, false)
			if fc.in.Owner == "" || containsNL(fc.in.Owner) {
				fc.in.Owner = "root"
			}
			in.Files = append(in.Files, fc.in)
		}
		for range r.IntN(6) {
			in.Spec.PreK3sCommands = append(in.Spec.PreK3sCommands, randText(r, false))
		}
		for range r.IntN(6) {
			in.Spec.PostK3sCommands = append(in.Spec.PostK3sCommands, randText(r, false))
		}
		dump(in)
	}
}

func containsNL(s string) bool {
	for _, c := range s {
		if c == '\n' {
			return true
		}
	}
	return false
}
