package bootstrap

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/test/webhooktest"
)

// inlineEndpoint is what a user might paste where a Secret's name belongs.
const inlineEndpoint = "postgres://k3s:s3cret@db.example.com:5432/k3s"

func datastore() *bootstrapv1.Datastore {
	return &bootstrapv1.Datastore{
		EndpointSecret: bootstrapv1.SecretKeyReference{Name: "pg", Key: "endpoint"},
		CASecret:       &bootstrapv1.SecretKeyReference{Name: "pg-tls", Key: "ca.crt"},
		CertSecret:     &bootstrapv1.SecretKeyReference{Name: "pg-tls", Key: "tls.crt"},
		KeySecret:      &bootstrapv1.SecretKeyReference{Name: "pg-tls", Key: "tls.key"},
	}
}

func TestValidateDatastore(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*bootstrapv1.Datastore)
		want   []wantErr
	}{
		{name: "all references", modify: func(*bootstrapv1.Datastore) {}},
		{name: "endpoint only", modify: func(d *bootstrapv1.Datastore) { d.CASecret, d.CertSecret, d.KeySecret = nil, nil, nil }},
		{name: "endpoint pasted as the name", modify: func(d *bootstrapv1.Datastore) { d.EndpointSecret.Name = inlineEndpoint },
			want: []wantErr{{"spec.serverConfig.datastore.endpointSecret.name", "must be the name of a Secret"}}},
		{name: "endpoint pasted as the key", modify: func(d *bootstrapv1.Datastore) { d.EndpointSecret.Key = inlineEndpoint },
			want: []wantErr{{"spec.serverConfig.datastore.endpointSecret.key", "must be a Secret data key"}}},
		{name: "endpoint without a name", modify: func(d *bootstrapv1.Datastore) { d.EndpointSecret.Name = "" },
			want: []wantErr{{"spec.serverConfig.datastore.endpointSecret.name", "Required value"}}},
		{name: "endpoint without a key", modify: func(d *bootstrapv1.Datastore) { d.EndpointSecret.Key = "" },
			want: []wantErr{{"spec.serverConfig.datastore.endpointSecret.key", "Required value"}}},
		{name: "CA PEM pasted as the name", modify: func(d *bootstrapv1.Datastore) { d.CASecret.Name = "-----BEGIN CERTIFICATE-----" },
			want: []wantErr{{"spec.serverConfig.datastore.caSecret.name", "not the value itself"}}},
		{name: "certificate without key", modify: func(d *bootstrapv1.Datastore) { d.KeySecret = nil },
			want: []wantErr{{"spec.serverConfig.datastore.keySecret", "certSecret and keySecret go together"}}},
		{name: "key without certificate", modify: func(d *bootstrapv1.Datastore) { d.CertSecret = nil },
			want: []wantErr{{"spec.serverConfig.datastore.keySecret", "certSecret and keySecret go together"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := validSpec()
			spec.ServerConfig.Datastore = datastore()
			tt.modify(spec.ServerConfig.Datastore)
			errs := ValidateSpec(&spec, field.NewPath("spec"))
			checkErrors(t, errs, tt.want)
			if msg := errs.ToAggregate(); msg != nil && strings.Contains(msg.Error(), "s3cret") {
				t.Errorf("the error repeats the pasted credential: %v", msg)
			}
		})
	}
}

func TestValidateDatastoreChange(t *testing.T) {
	embedded, external := bootstrapv1.KThreesServerConfig{}, bootstrapv1.KThreesServerConfig{Datastore: datastore()}
	moved := bootstrapv1.KThreesServerConfig{Datastore: datastore()}
	moved.Datastore.EndpointSecret = bootstrapv1.SecretKeyReference{Name: "pg-new", Key: "url"}
	path := field.NewPath("spec", "serverConfig")
	for _, tt := range []struct {
		name     string
		old, new bootstrapv1.KThreesServerConfig
		want     string
	}{
		{name: "stays embedded", old: embedded, new: embedded},
		{name: "stays external", old: external, new: external},
		{name: "other Secret for the same datastore", old: external, new: moved},
		{name: "embedded to external", old: embedded, new: external,
			want: "spec.serverConfig.datastore: Forbidden: cannot switch from the embedded etcd to an external datastore"},
		{name: "external to embedded", old: external, new: embedded,
			want: "spec.serverConfig.datastore: Forbidden: cannot switch from an external datastore to the embedded etcd"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateDatastoreChange(&tt.old, &tt.new, path)
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case tt.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.want)):
				t.Errorf("errors %v, want one containing %q", errs, tt.want)
			}
		})
	}
}

// Through the apiserver: the schema's CEL rule refuses an endpoint pasted as a Secret
// name without echoing it, and the webhook refuses a switch of an existing config.
func TestConfigDatastoreAdmission(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)

	pasted := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pasted"}, Spec: validSpec()}
	pasted.Spec.ServerConfig.Datastore = datastore()
	pasted.Spec.ServerConfig.Datastore.EndpointSecret.Name = inlineEndpoint
	err := env.Client.Create(ctx, pasted)
	webhooktest.CheckRejected(t, err, webhooktest.Rejection{
		Path: "spec.serverConfig.datastore.endpointSecret.name", Message: "must be the name of a Secret",
		Webhook: "validation.kthreesconfig.bootstrap.cluster.x-k8s.io", BySchema: true,
	})
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the rejection repeats the pasted credential: %v", err)
	}

	c := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "embedded"}, Spec: validSpec()}
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatalf("creating a config on embedded etcd: %v", err)
	}
	c.Spec.ServerConfig.Datastore = datastore()
	err = env.Client.Update(ctx, c)
	webhooktest.CheckRejected(t, err, webhooktest.Rejection{
		Path: "spec.serverConfig.datastore", Message: "cannot switch from the embedded etcd to an external datastore",
		Webhook: "validation.kthreesconfig.bootstrap.cluster.x-k8s.io",
	})
	got := &bootstrapv1.KThreesConfig{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.ServerConfig.Datastore != nil {
		t.Errorf("the refused switch was stored: %+v", got.Spec.ServerConfig.Datastore)
	}

	ext := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "external"}, Spec: validSpec()}
	ext.Spec.ServerConfig.Datastore = datastore()
	if err := env.Client.Create(ctx, ext); err != nil {
		t.Fatalf("creating a config with a datastore: %v", err)
	}
	ext.Spec.ServerConfig.Datastore.EndpointSecret.Name = "pg-replica"
	if err := env.Client.Update(ctx, ext); err != nil {
		t.Fatalf("changing the endpoint Secret refused: %v", err)
	}
	ext.Spec.ServerConfig.Datastore = nil
	err = env.Client.Update(ctx, ext)
	webhooktest.CheckRejected(t, err, webhooktest.Rejection{
		Path: "spec.serverConfig.datastore", Message: "cannot switch from an external datastore to the embedded etcd",
		Webhook: "validation.kthreesconfig.bootstrap.cluster.x-k8s.io",
	})
}
