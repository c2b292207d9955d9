package conversion

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilconversion "sigs.k8s.io/cluster-api/util/conversion"
	ctrl "sigs.k8s.io/controller-runtime"
)

const (
	// hubDataAnnotation holds, on a v1beta1 object, what of the v1beta2 parts
	// v1beta1 cannot express (machineNaming, format, users...). It is Cluster API's
	// annotation for the same purpose, so that Cluster API's conversion test helpers
	// recognise it.
	hubDataAnnotation = utilconversion.DataAnnotation
	// v1beta1DataAnnotation holds, on a stored (v1beta2) object, what of the v1beta1
	// parts v1beta2 cannot express: cluster-api-k3s's status fields, an
	// infrastructure template reference at another apiVersion than the newest, a
	// drain timeout in fractions of a second.
	v1beta1DataAnnotation = "k3s.cluster.x-k8s.io/v1beta1-conversion-data"
)

// keptPart is what is kept of one part (spec or status) of an object for the other
// version. This release writes it under the part's name plus "Patch" (see
// patchName): Patch turns a plain conversion of this version's part into the other
// version's, Withheld names the fields left out of it (withheld.go), and Digest is of
// this version's part without those fields, when it was kept. An earlier release
// wrote the other version's whole part, as Data under the bare part name, with a
// digest of the whole part; that is still read (legacy.go), never written. The
// earlier release ignores part names it does not know, so it reads this release's
// data as none kept.
type keptPart struct {
	Digest   string          `json:"digest"`
	Data     json.RawMessage `json:"data,omitempty"`
	Patch    json.RawMessage `json:"patch,omitempty"`
	Withheld []string        `json:"withheld,omitempty"`
}

// kept is an annotation's content, by part name.
type kept map[string]keptPart

func patchName(part string) string { return part + "Patch" }

// digest identifies a part's content, the way the earlier release did. encoding/json
// writes struct fields in order and map keys sorted, so equal parts give equal digests.
func digest(part any) (string, error) {
	b, err := json.Marshal(part)
	if err != nil {
		return "", fmt.Errorf("encoding for the conversion digest: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// partDigest is a part's digest without the withheld fields: a digest of content
// that may hold credentials would let a metadata reader test guesses. The kept patch
// never covers those fields, so a change in them alone leaves it valid.
func partDigest(part any, rules partRules) (string, error) {
	doc, err := partDoc(part)
	if err != nil {
		return "", err
	}
	for _, path := range rules.withheld {
		deletePath(doc, path)
	}
	return digest(doc)
}

// takeKept reads and removes the kept data under key from obj's annotations. An
// unreadable value is an error: it can only come from a hand edit, and converting
// as if nothing were kept would lose data silently.
func takeKept(obj metav1.Object, key string) (kept, error) {
	annotations := obj.GetAnnotations()
	value, ok := annotations[key]
	if !ok {
		return kept{}, nil
	}
	delete(annotations, key)
	obj.SetAnnotations(annotations)
	k := kept{}
	if err := json.Unmarshal([]byte(value), &k); err != nil {
		return nil, fmt.Errorf("reading annotation %s: %w", key, err)
	}
	return k, nil
}

// takeKeptOrNothing is takeKept for converting down, where an unreadable value (a
// hand edit, or a format of another release) is logged and ignored: the apiserver
// converts down for its v1beta1 watch cache and for managedFields on every write, so
// an error there would fail every write of the object, the controllers' too. What is
// lost is v1beta1's own status and reference details, which are made again.
func takeKeptOrNothing(ctx context.Context, obj metav1.Object, key string) kept {
	k, err := takeKept(obj, key)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Ignoring unreadable conversion data", "object", obj.GetNamespace()+"/"+obj.GetName())
		return kept{}
	}
	return k
}

// convertPart is the first two steps for one part (see kthreesconfig.go): the plain
// conversion with the kept patch applied, while this version's part is unchanged
// since it was kept; otherwise converted over a base, the kept patch alone when
// withBase, else nothing.
func convertPart[F, T any](k kept, rules partRules, from *F, to *T, withBase bool, convert func(*F, *T) error) error {
	p, ok := k[patchName(rules.name)]
	if !ok {
		return convertLegacyPart(k, rules.name, from, to, withBase, convert)
	}
	d, err := partDigest(*from, rules)
	if err != nil {
		return err
	}
	var start T
	if d == p.Digest {
		if err := convert(from, &start); err != nil {
			return err
		}
		return applyPatch(&start, p.Patch, to)
	}
	if withBase {
		if err := applyPatch(&start, p.Patch, &start); err != nil {
			return err
		}
	}
	*to = start
	return convert(from, to)
}

// keepPart is the last step for one part: the patch from converting result back to
// from, with the part's rules, unless there is nothing to keep. A result that cannot
// be converted back keeps from as a patch over nothing.
func keepPart[F, T any](k kept, rules partRules, from *F, result *T, back func(*T, *F) error) error {
	var again F
	if err := back(result, &again); err != nil {
		var zero F
		again = zero
	}
	patch, withheld, err := diffPart(&again, from, rules)
	if err != nil || (patch == nil && len(withheld) == 0) {
		return err
	}
	d, err := partDigest(*result, rules)
	if err != nil {
		return err
	}
	k[patchName(rules.name)] = keptPart{Digest: d, Patch: patch, Withheld: withheld}
	return nil
}

// downPart is convertPart for converting down, where kept data that cannot be
// applied (a hand edit) is logged and ignored, as takeKeptOrNothing does.
func downPart[F, T any](ctx context.Context, obj metav1.Object, k kept, rules partRules, from *F, to *T, withBase bool, convert func(*F, *T) error) error {
	err := convertPart(k, rules, from, to, withBase, convert)
	if err == nil || len(k) == 0 {
		return err
	}
	ctrl.LoggerFrom(ctx).Error(err, "Ignoring conversion data that cannot be applied", "object", obj.GetNamespace()+"/"+obj.GetName(), "part", rules.name)
	return convertPart(kept{}, rules, from, to, withBase, convert)
}

// write stores k under key on obj, or nothing when there is nothing to keep.
func (k kept) write(obj metav1.Object, key string) error {
	if len(k) == 0 {
		return nil
	}
	b, err := json.Marshal(k)
	if err != nil {
		return fmt.Errorf("writing annotation %s: %w", key, err)
	}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = string(b)
	obj.SetAnnotations(annotations)
	return nil
}

// infallible adapts a conversion that cannot fail to convertPart and keepPart.
func infallible[F, T any](f func(*F, *T)) func(*F, *T) error {
	return func(from *F, to *T) error {
		f(from, to)
		return nil
	}
}
