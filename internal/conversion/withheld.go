package conversion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Annotations are read by more parties than the spec (metadata-only clients, tools
// that print or copy them), and kept data on a stored object would outlive the
// removal of a value from the spec. So the fields where users put credentials are
// never kept: inline file contents, commands, extraConfig (free-form k3s options,
// vpn-auth's join key among them) and additionalUserData (free-form cloud-config or
// Ignition, where a proxy password or a password hash may sit). Each has the same
// name and meaning in both versions, except bootCommands, the extraConfig maps and
// additionalUserData, which only v1beta2 has.
//
// Those are named in the kept v1beta2 data instead ("withheld") and, when the
// v1beta1 object is converted back up, taken from the stored object it was read
// from: a v1beta1 client cannot see or change them, so a write through v1beta1
// leaves them as stored. Without a stored object to take them from, a named object
// is refused (a silent drop would change the machines' k3s configuration); an object
// without a name is not one the apiserver will store (it converts such partial
// objects for managedFields), so there they are left out. Going down nothing is ever
// withheld but v1beta1's obsolete status.bootstrapData, which is dropped.

// configSpecSecrets are the fields of a KThreesConfigSpec that may carry credentials.
var configSpecSecrets = []string{
	"files", "preK3sCommands", "postK3sCommands", "bootCommands",
	"serverConfig.extraConfig", "agentConfig.extraConfig", "additionalUserData",
}

func prefixed(prefix string, paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, prefix+p)
	}
	return out
}

// The rules of each kind's parts.
var (
	configSpecRules   = partRules{name: "spec", withheld: configSpecSecrets}
	configStatusRules = partRules{name: "status", withheld: []string{"bootstrapData"}}
	templateSpecRules = partRules{name: "spec", withheld: prefixed("template.spec.", configSpecSecrets)}
	// infrastructureTemplate: the converter keeps a kept apiVersion while kind and
	// name are the same (controlPlaneSpecToV1Beta1).
	controlPlaneSpecRules   = partRules{name: "spec", atomic: []string{"infrastructureTemplate"}, withheld: prefixed("kthreesConfigSpec.", configSpecSecrets)}
	controlPlaneStatusRules = partRules{name: "status"}
)

// restoreWithheld sets the fields of into (obj's part) that the kept part names as
// withheld to the stored obj's values.
func restoreWithheld[O client.Object, P any](ctx context.Context, r client.Reader, k kept, rules partRules, obj O, into *P, partOf func(O) *P) error {
	p, ok := k[patchName(rules.name)]
	if !ok || len(p.Withheld) == 0 {
		return nil
	}
	fields := strings.Join(prefixed(rules.name+".", p.Withheld), ", ")
	stored, err := readStored(ctx, r, obj)
	if err != nil {
		if obj.GetName() == "" && obj.GetGenerateName() == "" {
			return nil
		}
		return fmt.Errorf("%s %s/%s: %s are not shown at v1beta1, since they may hold credentials, and cannot be taken from the stored object: %w; write the object at v1beta2",
			reflect.TypeOf(obj).Elem().Name(), obj.GetNamespace(), obj.GetName(), fields, err)
	}
	storedDoc, err := partDoc(partOf(stored))
	if err != nil {
		return err
	}
	doc, err := partDoc(into)
	if err != nil {
		return err
	}
	for _, path := range p.Withheld {
		if v, ok := lookup(storedDoc, path); ok {
			setPath(doc, path, v)
		} else {
			deletePath(doc, path)
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encoding %s with the withheld fields: %w", rules.name, err)
	}
	var out P
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Errorf("reading %s with the withheld fields: %w", rules.name, err)
	}
	*into = out
	return nil
}

// readStored reads the stored object of obj's kind, namespace and name, which must
// be obj itself: obj must carry the stored object's UID. The conversion webhook
// answers whoever reaches it, and its answer holds what is read here (withheld
// fields may hold credentials): a name alone, which anyone can guess, reads nothing.
// Every write of an existing object carries the stored UID (an update that names
// none is refused; it can be sent at v1beta2).
func readStored[O client.Object](ctx context.Context, r client.Reader, obj O) (O, error) {
	stored := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(O)
	if r == nil {
		return stored, errors.New("no reader of stored objects is set")
	}
	if obj.GetUID() == "" {
		return stored, errors.New("the object names no uid, so it cannot be matched with the stored one")
	}
	if err := r.Get(ctx, client.ObjectKeyFromObject(obj), stored); err != nil {
		return stored, err
	}
	if uid := obj.GetUID(); uid != stored.GetUID() {
		return stored, fmt.Errorf("the stored object is another one (uid %s, not %s)", stored.GetUID(), uid)
	}
	return stored, nil
}

func partDoc(part any) (map[string]any, error) {
	b, err := json.Marshal(part)
	if err != nil {
		return nil, fmt.Errorf("encoding for the withheld fields: %w", err)
	}
	return decodeObject(b)
}
