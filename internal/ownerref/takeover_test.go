package ownerref

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

const (
	ns       = "default"
	kcpName  = "kcp"
	kcpUID   = types.UID("kcp-uid")
	kcpAPI   = "controlplane.cluster.x-k8s.io/v1beta2"
	kcpKind  = "KThreesControlPlane"
	capiAPI  = "cluster.x-k8s.io/v1beta2"
	bootAPI2 = "bootstrap.cluster.x-k8s.io/v1beta2"
	bootAPI1 = "bootstrap.cluster.x-k8s.io/v1beta1"
)

func newScheme(t testing.TB, withControlPlane bool) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	adds := []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1.AddToScheme, bootstrapv1.AddToScheme}
	if withControlPlane {
		adds = append(adds, controlplanev1.AddToScheme)
	}
	for _, add := range adds {
		utilruntime.Must(add(s))
	}
	return s
}

// newOwner leaves TypeMeta empty on purpose: that is what a typed client
// returns, and TakeOver must not depend on it.
func newOwner() *controlplanev1.KThreesControlPlane {
	return &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kcpName, UID: kcpUID},
	}
}

func ref(apiVersion, kind, name string, uid types.UID, controller bool) metav1.OwnerReference {
	r := metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid}
	if controller {
		r.Controller = new(true)
	}
	return r
}

// ownerCtl is the one reference TakeOver must leave to the owner.
func ownerCtl() metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: kcpAPI, Kind: kcpKind, Name: kcpName, UID: kcpUID,
		Controller: new(true), BlockOwnerDeletion: new(true),
	}
}

func clusterRef(controller bool) metav1.OwnerReference {
	return ref(capiAPI, "Cluster", "c1", "cluster-uid", controller)
}

func configMapRef() metav1.OwnerReference {
	return ref("v1", "ConfigMap", "cm", "cm-uid", false)
}

func machineSetRef(controller bool) metav1.OwnerReference {
	r := ref(capiAPI, "MachineSet", "ms", "ms-uid", controller)
	r.BlockOwnerDeletion = new(true)
	return r
}

func kthreesConfigRef(apiVersion, name string, controller bool) metav1.OwnerReference {
	r := ref(apiVersion, "KThreesConfig", name, types.UID(name+"-uid"), controller)
	r.BlockOwnerDeletion = new(true)
	return r
}

func secretWith(refs []metav1.OwnerReference) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1-token", OwnerReferences: refs}}
}

func copyRefs(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if refs == nil {
		return nil
	}
	out := make([]metav1.OwnerReference, len(refs))
	for i := range refs {
		refs[i].DeepCopyInto(&out[i])
	}
	return out
}

func TestTakeOver(t *testing.T) {
	demotedMachineSet := machineSetRef(false)

	tests := []struct {
		name        string
		in          []metav1.OwnerReference
		owner       func() *controlplanev1.KThreesControlPlane
		noCPScheme  bool
		want        []metav1.OwnerReference
		wantChanged bool
		wantErr     bool
	}{
		{
			name:        "no references",
			in:          nil,
			want:        []metav1.OwnerReference{ownerCtl()},
			wantChanged: true,
		},
		{
			name:        "foreign non-controller references are kept in order",
			in:          []metav1.OwnerReference{clusterRef(false), configMapRef()},
			want:        []metav1.OwnerReference{clusterRef(false), configMapRef(), ownerCtl()},
			wantChanged: true,
		},
		{
			name:        "KThreesConfig controller is dropped",
			in:          []metav1.OwnerReference{kthreesConfigRef(bootAPI2, "cfg-0", true)},
			want:        []metav1.OwnerReference{ownerCtl()},
			wantChanged: true,
		},
		{
			name:        "Cluster controller is kept as non-controller",
			in:          []metav1.OwnerReference{configMapRef(), clusterRef(true)},
			want:        []metav1.OwnerReference{configMapRef(), clusterRef(false), ownerCtl()},
			wantChanged: true,
		},
		{
			name: "non-controller KThreesConfig dropped and Cluster controller demoted",
			in: []metav1.OwnerReference{
				kthreesConfigRef(bootAPI2, "cfg-0", false),
				clusterRef(true),
				machineSetRef(false),
			},
			want:        []metav1.OwnerReference{clusterRef(false), demotedMachineSet, ownerCtl()},
			wantChanged: true,
		},
		{
			name: "mixed list with KThreesConfigs in several versions",
			in: []metav1.OwnerReference{
				clusterRef(false),
				kthreesConfigRef(bootAPI1, "cfg-old", true),
				configMapRef(),
				kthreesConfigRef(bootAPI2, "cfg-0", false),
				kthreesConfigRef(bootAPI2, "cfg-0", false),
				machineSetRef(false),
			},
			want:        []metav1.OwnerReference{clusterRef(false), configMapRef(), machineSetRef(false), ownerCtl()},
			wantChanged: true,
		},
		{
			name:        "already controlled by owner",
			in:          []metav1.OwnerReference{clusterRef(false), ownerCtl(), configMapRef()},
			want:        []metav1.OwnerReference{clusterRef(false), ownerCtl(), configMapRef()},
			wantChanged: false,
		},
		{
			name: "owner reference without controller is promoted in place",
			in: []metav1.OwnerReference{
				clusterRef(false),
				func() metav1.OwnerReference {
					r := ownerCtl()
					r.Controller = new(false)
					r.BlockOwnerDeletion = nil
					return r
				}(),
				configMapRef(),
			},
			want:        []metav1.OwnerReference{clusterRef(false), ownerCtl(), configMapRef()},
			wantChanged: true,
		},
		{
			name: "owner controller without BlockOwnerDeletion is fixed",
			in: []metav1.OwnerReference{func() metav1.OwnerReference {
				r := ownerCtl()
				r.BlockOwnerDeletion = new(false)
				return r
			}()},
			want:        []metav1.OwnerReference{ownerCtl()},
			wantChanged: true,
		},
		{
			name: "stale owner reference with another UID is replaced",
			in: []metav1.OwnerReference{
				ref(kcpAPI, kcpKind, kcpName, "old-uid", true),
				clusterRef(false),
			},
			want:        []metav1.OwnerReference{ownerCtl(), clusterRef(false)},
			wantChanged: true,
		},
		{
			name: "duplicate owner references collapse into one",
			in: []metav1.OwnerReference{
				ref(kcpAPI, kcpKind, kcpName, "old-uid", false),
				clusterRef(false),
				ownerCtl(),
			},
			want:        []metav1.OwnerReference{ownerCtl(), clusterRef(false)},
			wantChanged: true,
		},
		{
			name: "owner reference in an older version is rewritten to the scheme's",
			in: []metav1.OwnerReference{func() metav1.OwnerReference {
				r := ownerCtl()
				r.APIVersion = "controlplane.cluster.x-k8s.io/v1beta1"
				return r
			}()},
			want:        []metav1.OwnerReference{ownerCtl()},
			wantChanged: true,
		},
		{
			name: "another KThreesControlPlane controller is demoted",
			in:   []metav1.OwnerReference{ref(kcpAPI, kcpKind, "other-kcp", "other-uid", true)},
			want: []metav1.OwnerReference{
				ref(kcpAPI, kcpKind, "other-kcp", "other-uid", false),
				ownerCtl(),
			},
			wantChanged: true,
		},
		{
			name: "duplicate foreign references keep the first",
			in: []metav1.OwnerReference{
				clusterRef(false),
				configMapRef(),
				ref(capiAPI, "Cluster", "c1", "stale-cluster-uid", true),
			},
			want:        []metav1.OwnerReference{clusterRef(false), configMapRef(), ownerCtl()},
			wantChanged: true,
		},
		{
			// A Cluster that happens to share the owner's name: trusting the
			// wrong TypeMeta would take it for the owner.
			name: "wrong owner TypeMeta is ignored",
			in:   []metav1.OwnerReference{ref(capiAPI, "Cluster", kcpName, "cluster-uid", true)},
			owner: func() *controlplanev1.KThreesControlPlane {
				o := newOwner()
				o.TypeMeta = metav1.TypeMeta{APIVersion: capiAPI, Kind: "Cluster"}
				return o
			},
			want: []metav1.OwnerReference{
				ref(capiAPI, "Cluster", kcpName, "cluster-uid", false),
				ownerCtl(),
			},
			wantChanged: true,
		},
		{
			name:       "owner type not in scheme",
			in:         []metav1.OwnerReference{kthreesConfigRef(bootAPI2, "cfg-0", true)},
			noCPScheme: true,
			wantErr:    true,
		},
		{
			name: "owner without UID",
			in:   []metav1.OwnerReference{kthreesConfigRef(bootAPI2, "cfg-0", true)},
			owner: func() *controlplanev1.KThreesControlPlane {
				o := newOwner()
				o.UID = ""
				return o
			},
			wantErr: true,
		},
		{
			name: "owner without name",
			in:   []metav1.OwnerReference{clusterRef(true)},
			owner: func() *controlplanev1.KThreesControlPlane {
				o := newOwner()
				o.Name = ""
				return o
			},
			wantErr: true,
		},
		{
			name: "owner in another namespace",
			in:   []metav1.OwnerReference{kthreesConfigRef(bootAPI2, "cfg-0", true)},
			owner: func() *controlplanev1.KThreesControlPlane {
				o := newOwner()
				o.Namespace = "elsewhere"
				return o
			},
			wantErr: true,
		},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			scheme := newScheme(t, !tc.noCPScheme)
			owner := newOwner()
			if tc.owner != nil {
				owner = tc.owner()
			}
			obj := secretWith(tc.in)
			snapshot := copyRefs(tc.in)

			changed, err := TakeOver(obj, owner, scheme)

			got := obj.GetOwnerReferences()
			if tc.wantErr {
				if err == nil {
					t.Fatalf("TakeOver() error = nil, want an error")
				}
				if changed {
					t.Errorf("TakeOver() changed = true on error")
				}
				assertSameSlice(t, tc.in, got)
				if !reflect.DeepEqual(got, snapshot) {
					t.Errorf("references changed on error:\n got %s\nwant %s", dump(got), dump(snapshot))
				}
				return
			}
			if err != nil {
				t.Fatalf("TakeOver() error = %v", err)
			}
			if changed != tc.wantChanged {
				t.Errorf("TakeOver() changed = %v, want %v", changed, tc.wantChanged)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("references:\n got %s\nwant %s", dump(got), dump(tc.want))
			}
			// The caller's original slice must never be written through,
			// whether or not obj changed.
			if !reflect.DeepEqual(tc.in, snapshot) {
				t.Errorf("input slice was modified:\n got %s\nwant %s", dump(tc.in), dump(snapshot))
			}
			if !changed {
				assertSameSlice(t, tc.in, got)
			}
		})
	}
}

// assertSameSlice shows that obj still holds the very slice it was built
// with, i.e. that TakeOver did not even reassign an equal copy.
func assertSameSlice(t *testing.T, want, got []metav1.OwnerReference) {
	t.Helper()
	if len(got) != len(want) || cap(got) != cap(want) {
		t.Errorf("slice rewritten: len/cap %d/%d, want %d/%d", len(got), cap(got), len(want), cap(want))
		return
	}
	if len(want) > 0 && &got[0] != &want[0] {
		t.Errorf("slice rewritten: backing array differs")
	}
}

func dump(refs []metav1.OwnerReference) string {
	s := "["
	for i, r := range refs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("{%s %s %s %s ctl=%s bod=%s}", r.APIVersion, r.Kind, r.Name, r.UID, boolPtr(r.Controller), boolPtr(r.BlockOwnerDeletion))
	}
	return s + "]"
}

func boolPtr(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}

// TestKThreesConfigGroupKind guards the hand-written kind name against a
// rename in the API package.
func TestKThreesConfigGroupKind(t *testing.T) {
	gvk, err := apiutil.GVKForObject(&bootstrapv1.KThreesConfig{}, newScheme(t, false))
	if err != nil {
		t.Fatal(err)
	}
	if gvk.GroupKind() != kthreesConfigGroupKind {
		t.Errorf("scheme says %v, package matches %v", gvk.GroupKind(), kthreesConfigGroupKind)
	}
}

func TestIsControlledBy(t *testing.T) {
	tests := []struct {
		name       string
		in         []metav1.OwnerReference
		owner      func() *controlplanev1.KThreesControlPlane
		noCPScheme bool
		want       bool
		wantErr    bool
	}{
		{name: "no references", want: false},
		{name: "owner is controller", in: []metav1.OwnerReference{clusterRef(false), ownerCtl()}, want: true},
		{
			name: "owner is controller with an older apiVersion",
			in: []metav1.OwnerReference{func() metav1.OwnerReference {
				r := ownerCtl()
				r.APIVersion = "controlplane.cluster.x-k8s.io/v1beta1"
				return r
			}()},
			want: true,
		},
		{
			name: "owner is controller alongside a KThreesConfig",
			in:   []metav1.OwnerReference{kthreesConfigRef(bootAPI2, "cfg-0", false), ownerCtl()},
			want: true,
		},
		{name: "owner referenced but not controller", in: []metav1.OwnerReference{ref(kcpAPI, kcpKind, kcpName, kcpUID, false)}, want: false},
		{name: "KThreesConfig is controller", in: []metav1.OwnerReference{kthreesConfigRef(bootAPI2, "cfg-0", true)}, want: false},
		{name: "stale UID", in: []metav1.OwnerReference{ref(kcpAPI, kcpKind, kcpName, "old-uid", true)}, want: false},
		{name: "other name", in: []metav1.OwnerReference{ref(kcpAPI, kcpKind, "other", kcpUID, true)}, want: false},
		{name: "other kind with owner's name and UID", in: []metav1.OwnerReference{ref(capiAPI, "Cluster", kcpName, kcpUID, true)}, want: false},
		{
			name: "wrong owner TypeMeta is ignored",
			in:   []metav1.OwnerReference{ref(capiAPI, "Cluster", kcpName, kcpUID, true)},
			owner: func() *controlplanev1.KThreesControlPlane {
				o := newOwner()
				o.TypeMeta = metav1.TypeMeta{APIVersion: capiAPI, Kind: "Cluster"}
				return o
			},
			want: false,
		},
		{name: "owner type not in scheme", in: []metav1.OwnerReference{ownerCtl()}, noCPScheme: true, wantErr: true},
		{
			name: "owner without UID",
			in:   []metav1.OwnerReference{ref(kcpAPI, kcpKind, kcpName, "", true)},
			owner: func() *controlplanev1.KThreesControlPlane {
				o := newOwner()
				o.UID = ""
				return o
			},
			wantErr: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			owner := newOwner()
			if tc.owner != nil {
				owner = tc.owner()
			}
			got, err := IsControlledBy(secretWith(tc.in), owner, newScheme(t, !tc.noCPScheme))
			if (err != nil) != tc.wantErr {
				t.Fatalf("IsControlledBy() error = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("IsControlledBy() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTakeOverProperties runs TakeOver on random reference lists drawn from
// a pool that mixes the owner (current and stale), KThreesConfigs in two
// versions, foreign kinds (one sharing the owner's name) and duplicates.
func TestTakeOverProperties(t *testing.T) {
	scheme := newScheme(t, true)
	pool := []metav1.OwnerReference{
		ownerCtl(),
		ref(kcpAPI, kcpKind, kcpName, "old-uid", false),
		ref("controlplane.cluster.x-k8s.io/v1beta1", kcpKind, kcpName, kcpUID, false),
		ref(kcpAPI, kcpKind, "other-kcp", "other-uid", false),
		kthreesConfigRef(bootAPI2, "cfg-0", false),
		kthreesConfigRef(bootAPI2, "cfg-1", false),
		kthreesConfigRef(bootAPI1, "cfg-0", false),
		clusterRef(false),
		ref(capiAPI, "Cluster", "c1", "stale-cluster-uid", false),
		ref(capiAPI, "Cluster", kcpName, "cluster-kcp-uid", false),
		configMapRef(),
		machineSetRef(false),
		ref(capiAPI, "Machine", "m-0", "m-0-uid", false),
	}
	rng := rand.New(rand.NewSource(1))
	randBool := func() *bool {
		switch rng.Intn(3) {
		case 0:
			return nil
		case 1:
			return new(false)
		default:
			return new(true)
		}
	}

	refusals := 0
	for i := range 500 {
		in := make([]metav1.OwnerReference, rng.Intn(9))
		for j := range in {
			in[j] = *pool[rng.Intn(len(pool))].DeepCopy()
			in[j].Controller = randBool()
			in[j].BlockOwnerDeletion = randBool()
		}
		snapshot := copyRefs(in)
		obj := secretWith(in)

		changed, err := TakeOver(obj, newOwner(), scheme)
		if external := externalControllerIn(snapshot); external {
			refusals++
			var refused *ExternallyControlledError
			if !errors.As(err, &refused) || changed || !reflect.DeepEqual(obj.GetOwnerReferences(), snapshot) {
				t.Errorf("case %d (in %s): TakeOver() = %v, %v and references %s; want a refusal that changes nothing",
					i, dump(snapshot), changed, err, dump(obj.GetOwnerReferences()))
			}
			continue
		}
		if err != nil {
			t.Fatalf("case %d: TakeOver() error = %v", i, err)
		}
		got := obj.GetOwnerReferences()
		report := func(format string, args ...any) {
			t.Helper()
			t.Errorf("case %d (in %s, got %s): %s", i, dump(snapshot), dump(got), fmt.Sprintf(format, args...))
		}

		if !reflect.DeepEqual(in, snapshot) {
			report("input slice was modified")
		}
		if changed == reflect.DeepEqual(snapshot, got) {
			report("changed = %v does not match the references", changed)
		}

		var controllers []metav1.OwnerReference
		seen := map[refKey]bool{}
		var foreign []refKey
		for _, r := range got {
			if r.Controller != nil && *r.Controller {
				controllers = append(controllers, r)
			}
			if groupKindOf(r) == kthreesConfigGroupKind {
				report("KThreesConfig reference %s left", r.Name)
			}
			if seen[keyOf(r)] {
				report("duplicate reference %v", keyOf(r))
			}
			seen[keyOf(r)] = true
			if keyOf(r) != keyOf(ownerCtl()) {
				foreign = append(foreign, keyOf(r))
			}
		}
		if len(controllers) != 1 || !reflect.DeepEqual(controllers[0], ownerCtl()) {
			report("controllers = %s, want only the owner", dump(controllers))
		}

		// Every foreign reference survives, in first-seen order.
		var wantForeign []refKey
		for _, r := range snapshot {
			k := keyOf(r)
			if k == keyOf(ownerCtl()) || groupKindOf(r) == kthreesConfigGroupKind || slices.Contains(wantForeign, k) {
				continue
			}
			wantForeign = append(wantForeign, k)
		}
		if !slices.Equal(foreign, wantForeign) {
			report("foreign references %v, want %v", foreign, wantForeign)
		}

		again, err := TakeOver(obj, newOwner(), scheme)
		if err != nil {
			t.Fatalf("case %d: second TakeOver() error = %v", i, err)
		}
		if again {
			report("second TakeOver() changed = true")
		}
		assertSameSlice(t, got, obj.GetOwnerReferences())
	}
	// Both paths must have been drawn often enough to mean something.
	if refusals < 50 || refusals > 450 {
		t.Errorf("%d of 500 cases had an external controller; the pool no longer exercises both paths", refusals)
	}
}

// externalControllerIn is the rule TakeOver must follow, spelled out apart from
// ExternalController: a controller reference that is not a Cluster, a
// KThreesControlPlane or a KThreesConfig.
func externalControllerIn(refs []metav1.OwnerReference) bool {
	for _, r := range refs {
		if r.Controller == nil || !*r.Controller {
			continue
		}
		switch gk := groupKindOf(r); {
		case gk.Group == "cluster.x-k8s.io" && gk.Kind == "Cluster",
			gk.Group == "controlplane.cluster.x-k8s.io" && gk.Kind == "KThreesControlPlane",
			gk.Group == "bootstrap.cluster.x-k8s.io" && gk.Kind == "KThreesConfig":
		default:
			return true
		}
	}
	return false
}
