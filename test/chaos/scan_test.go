package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// privateKeyMarker is in every PEM private key, whatever its kind.
const privateKeyMarker = "PRIVATE KEY-----"

// secretNeedles are what must appear in no log and no Event: the passphrases of
// every token, and a line from the body of every private key of the namespaces (a
// log could print a key without its PEM header).
func secretNeedles(ctx context.Context, tokens []string, namespaces []string) ([]string, error) {
	needles := append([]string(nil), tokens...)
	for _, ns := range namespaces {
		list := &corev1.SecretList{}
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, s := range list.Items {
			for _, v := range s.Data {
				if !strings.Contains(string(v), privateKeyMarker) {
					continue
				}
				lines := strings.Split(string(v), "\n")
				if len(lines) > 1 && len(lines[1]) >= 40 {
					needles = append(needles, lines[1])
				}
			}
		}
	}
	return needles, nil
}

// scan reports each text that holds a needle or a private key, naming the text and
// what it holds but never the secret itself.
func scan(texts map[string][]byte, needles []string) []string {
	var out []string
	for name, b := range texts {
		s := string(b)
		if strings.Contains(s, privateKeyMarker) {
			out = append(out, name+" holds a private key")
		}
		for i, n := range needles {
			if n != "" && strings.Contains(s, n) {
				out = append(out, fmt.Sprintf("%s holds secret #%d", name, i))
			}
		}
	}
	return out
}

// eventTexts are all Events of the management cluster, each as JSON.
func eventTexts(ctx context.Context) (map[string][]byte, error) {
	list := &corev1.EventList{}
	if err := env.Client.List(ctx, list); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, e := range list.Items {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		out["Event "+e.Namespace+"/"+e.Name] = b
	}
	return out, nil
}
