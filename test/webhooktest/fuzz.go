package webhooktest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"
)

// FuzzNow is the time fuzz tests take as now; filled times lie around it.
var FuzzNow = time.Unix(1_790_000_000, 0).UTC()

// fuzzStrings are the values a filled string field takes most of the time: versions,
// networks, addresses, durations, paths and the enum values the API knows. Purely
// random strings fail the first check of every field, so the validators' deeper rules
// (cross-field ones, the ones after a successful parse) would never be reached.
var fuzzStrings = []string{
	"", "a", "x", "name-1", "-", "a b", "kube-system", "default", "0", "1", "3", "-1", "true",
	"v1.31.4+k3s1", "1.31.4+k3s1", "v1.32.0+k3s1", "v1.30.2+k3s2", "v1.33.1-rc1+k3s1", "v1.031.4+k3s1",
	"10.42.0.0/16", "10.43.0.0/16", "10.43.0.10", "fd00::/8", "2001:db8::/64", "192.168.1.1", "256.0.0.1",
	"https://example.com", "http://10.0.0.1:2379", "postgres://user:pass@db:5432/k3s", "mysql://u@tcp(db:3306)/k3s",
	"etcd", "sqlite", "cloud-config", "ignition", "base64", "gzip", "gzip+base64", "mbr", "gpt", "RollingUpdate",
	"NoSchedule", "NoExecute", "PreferNoSchedule", "key=value:NoSchedule", "node-role.kubernetes.io/master",
	"0s", "1m", "-1m", "10s", "/etc/rancher/k3s/config.yaml", "/var/lib/x", "../x", "root", "0644", "999",
	"{{ .cluster.name }}-{{ .random }}", "{{ .random }}", "DockerMachineTemplate", "infrastructure.cluster.x-k8s.io",
	"bootstrap.cluster.x-k8s.io", "controlplane.cluster.x-k8s.io", "cluster.x-k8s.io/managed-by", "a/b/c",
	"$(rm -rf /)", "x\ny", "s3.example.com", "us-east-1", "bucket", "secret", "10", "100Mi",
}

// jsonValues are what an arbitrary JSON field (extraConfig, fieldsV1) holds.
var jsonValues = []string{`"a"`, `"v1.31.4+k3s1"`, `true`, `1`, `-1`, `null`, `[]`, `["a","b"]`, `{}`, `{"a":1}`, `""`}

// quantities are what a Quantity field takes: the fuzz input decides the value, the
// apiserver's serialization decides the form.
var quantities = []string{"0", "1", "-1", "1Gi", "100Mi", "1.5", "1e3", "1000000Ti"}

func fuzzFuncs() []any {
	return []any{
		func(s *string, c randfill.Continue) {
			// Most optional fields are unset in real objects: half the strings are
			// empty, so that some random objects pass validation and reach what follows.
			if c.Bool() {
				*s = ""
				return
			}
			if c.Intn(6) == 0 {
				*s = c.String(20)
				return
			}
			*s = fuzzStrings[c.Intn(len(fuzzStrings))]
		},
		func(j *apiextensionsv1.JSON, c randfill.Continue) {
			j.Raw = []byte(jsonValues[c.Intn(len(jsonValues))])
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			r.Raw = []byte(`{"f:spec":{}}`)
			if c.Bool() {
				r.Raw = []byte(`{}`)
			}
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.SetRawString(`{"f:spec":{}}`)
		},
		func(q *resource.Quantity, c randfill.Continue) {
			*q = resource.MustParse(quantities[c.Intn(len(quantities))])
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(int32(c.Intn(5)) - 1)
				return
			}
			*v = intstr.FromString([]string{"0", "1", "2", "0%", "50%", "100%", "x", ""}[c.Intn(8)])
		},
		func(t *metav1.Time, c randfill.Continue) {
			// Within a day of FuzzNow, in whole seconds as the apiserver stores times;
			// a fixed base keeps a finding reproducible.
			*t = metav1.NewTime(FuzzNow.Add(time.Duration(c.Int63n(2*86400)-86400) * time.Second))
		},
		func(d *metav1.Duration, c randfill.Continue) {
			d.Duration = time.Duration(c.Int63n(int64(2*time.Hour))) - time.Hour
		},
		func(i *int32, c randfill.Continue) {
			// Small numbers reach the replica and count rules; now and then any value.
			if c.Intn(4) == 0 {
				*i = c.Int31()
				if c.Bool() {
					*i = -*i
				}
				return
			}
			*i = int32(c.Intn(8)) - 1
		},
	}
}

// FillFromFuzz makes *obj from fuzz input, as an API client could have written it. Data
// that decodes as JSON into obj is used as is, so that readable seed corpora reach
// deep fields and mutate near them; any other data drives a random filler
// (randfill reading its randomness from data, so that the fuzzer's coverage
// guidance still works). Either way the object then goes through JSON, as every object
// the apiserver hands to a webhook has. It returns false when obj cannot be written
// as JSON (the apiserver could never send it).
func FillFromFuzz[T any](data []byte, obj *T) bool {
	var zero T
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) && json.Unmarshal(data, obj) == nil {
		return RoundTrip(obj)
	}
	*obj = zero
	randfill.NewFromGoFuzz(data).NilChance(0.6).NumElements(0, 3).MaxDepth(12).Funcs(fuzzFuncs()...).Fill(obj)
	return RoundTrip(obj)
}

// RoundTrip replaces *obj by its JSON form read back into a fresh value, as the
// apiserver stores it; false when obj cannot be written as JSON.
func RoundTrip[T any](obj *T) bool {
	b, err := json.Marshal(obj)
	if err != nil {
		return false
	}
	var fresh T
	if err := json.Unmarshal(b, &fresh); err != nil {
		return false
	}
	*obj = fresh
	return true
}

// CheckFieldErrors fails the test unless err is nil or an Invalid status error whose
// every cause names a field of the object (spec... or metadata...) that the message
// also names: a user must be able to tell from a denial which field to fix.
func CheckFieldErrors(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) {
		t.Fatalf("%s: rejected with %T %v, want an Invalid status error", what, err, err)
	}
	if msg := CheckStatusCauses(status.Status()); msg != "" {
		t.Fatalf("%s: %s", what, msg)
	}
}

// CheckStatusCauses is CheckFieldErrors for a denial's Status, as admission responses
// carry it: it returns what is wrong, or "".
func CheckStatusCauses(s metav1.Status) string {
	if s.Details == nil || len(s.Details.Causes) == 0 {
		return fmt.Sprintf("denial %q has no field causes", s.Message)
	}
	for _, c := range s.Details.Causes {
		if !strings.HasPrefix(c.Field, "spec") && !strings.HasPrefix(c.Field, "metadata") {
			return fmt.Sprintf("cause %q of denial %q names no field of the object (field %q)", c.Message, s.Message, c.Field)
		}
		if !strings.Contains(s.Message, c.Field) {
			return fmt.Sprintf("denial %q does not name the field %q of its cause %q", s.Message, c.Field, c.Message)
		}
	}
	return ""
}

// SameJSON reports whether a and b are written the same as JSON, as the apiserver
// would store them: nil and empty lists or maps are the same there.
func SameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(dropEmpty(va), dropEmpty(vb))
}

// dropEmpty removes empty lists and maps (and nulls) from a JSON value, recursively.
func dropEmpty(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			e = dropEmpty(e)
			if e == nil {
				continue
			}
			out[k] = e
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(x) == 0 {
			return nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = dropEmpty(e)
		}
		return out
	}
	return v
}

// Fuzzing reports whether this test binary runs a fuzz target (go test -fuzz) or is
// one of its workers. TestMain then starts no apiserver: fuzz targets call the code
// directly, and the fuzzer starts a worker process per core and again after every
// finding, each of which would start its own.
func Fuzzing() bool {
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.fuzz=") || strings.HasPrefix(a, "-test.fuzzworker") {
			return true
		}
	}
	return false
}
