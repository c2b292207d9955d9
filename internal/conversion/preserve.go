package conversion

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilconversion "sigs.k8s.io/cluster-api/util/conversion"
	ctrl "sigs.k8s.io/controller-runtime"
)

const (
	// hubDataAnnotation holds, on a v1beta1 object, the v1beta2 parts that v1beta1
	// cannot express. It is Cluster API's annotation for the same purpose, so that
	// Cluster API's conversion test helpers recognise it.
	hubDataAnnotation = utilconversion.DataAnnotation
	// v1beta1DataAnnotation holds, on a stored (v1beta2) object, the v1beta1 parts
	// that v1beta2 cannot express: cluster-api-k3s's status fields, and reference
	// details such as an infrastructure template's apiVersion.
	v1beta1DataAnnotation = "k3s.cluster.x-k8s.io/v1beta1-conversion-data"
)

// keptPart is one part (spec or status) of an object as the other version said it,
// with a digest of what this version said at the same time.
type keptPart struct {
	// Digest is of this version's part when the data was kept.
	Digest string `json:"digest"`
	// Data is the other version's part.
	Data json.RawMessage `json:"data"`
}

// kept is an annotation's content, by part name.
type kept map[string]keptPart

// digest identifies a part's content. encoding/json writes struct fields in order and
// map keys sorted, so equal parts give equal digests.
func digest(part any) (string, error) {
	b, err := json.Marshal(part)
	if err != nil {
		return "", fmt.Errorf("encoding for the conversion digest: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
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

// restore fills into with the kept part when current (this version's part now)
// is what it was when the part was kept: the object was not changed through this
// version since, so the other version's part stands exactly as it was.
func (k kept) restore(name string, current, into any) (bool, error) {
	p, ok := k[name]
	if !ok {
		return false, nil
	}
	d, err := digest(current)
	if err != nil || d != p.Digest {
		return false, err
	}
	if err := json.Unmarshal(p.Data, into); err != nil {
		return false, fmt.Errorf("restoring kept %s: %w", name, err)
	}
	return true, nil
}

// base fills into with the kept part whatever this version says now: a starting
// point whose fields this version can express are then overwritten.
func (k kept) base(name string, into any) error {
	p, ok := k[name]
	if !ok {
		return nil
	}
	if err := json.Unmarshal(p.Data, into); err != nil {
		return fmt.Errorf("reading kept %s: %w", name, err)
	}
	return nil
}

// keepUnless keeps part (the other version's) against current (this version's)
// unless a conversion of current alone gives part back, so that objects converted
// without loss carry no annotation.
func (k kept) keepUnless(name string, part, current, freshlyConverted any) error {
	if apiequality.Semantic.DeepEqual(part, freshlyConverted) {
		return nil
	}
	data, err := json.Marshal(part)
	if err != nil {
		return fmt.Errorf("keeping %s: %w", name, err)
	}
	d, err := digest(current)
	if err != nil {
		return err
	}
	k[name] = keptPart{Digest: d, Data: data}
	return nil
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

// convertPart is the first two steps for one part (see kthreesconfig.go): from as it
// was kept whole, while unchanged since; otherwise from converted over a base, the
// kept part when withBase, else nothing.
func convertPart[F, T any](k kept, name string, from *F, to *T, withBase bool, convert func(*F, *T) error) error {
	if ok, err := k.restore(name, *from, to); err != nil || ok {
		return err
	}
	var zero T
	*to = zero
	if withBase {
		if err := k.base(name, to); err != nil {
			return err
		}
	}
	return convert(from, to)
}

// keepPart is the last step for one part: from is kept against result unless
// converting result back gives it. A result that cannot be converted back keeps from.
func keepPart[F, T any](k kept, name string, from *F, result *T, back func(*T, *F) error) error {
	var again F
	if err := back(result, &again); err != nil {
		var zero F
		again = zero
	}
	return k.keepUnless(name, *from, *result, again)
}

// infallible adapts a conversion that cannot fail to convertPart and keepPart.
func infallible[F, T any](f func(*F, *T)) func(*F, *T) error {
	return func(from *F, to *T) error {
		f(from, to)
		return nil
	}
}
