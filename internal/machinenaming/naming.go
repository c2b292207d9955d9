package machinenaming

import (
	"errors"
	"fmt"
	"strings"

	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Cluster API renders its control plane's machine names with a generator of the same
// shape, but keeps it in an internal package (internal/topology/names) that cannot be
// imported; this one follows its rules (text/template syntax, an unknown variable is
// an error, a 5-character .random, names over 63 characters cut to 58 plus a random
// suffix) so that a template written for Cluster API with text and variables behaves
// the same here, variable names aside. Unlike Cluster API's, it refuses everything
// else text/template offers (see render.go).

// DefaultTemplate is the name of a server Machine when spec.machineNaming.template is unset.
const DefaultTemplate = "{{ .kthreesControlPlane.name }}-{{ .random }}"

const (
	// maxNameLength is the longest name given, as Cluster API's: what fits a DNS
	// label, so that names also serve as host names.
	maxNameLength = 63
	// randomLength is the length of .random and of the suffix of a cut name.
	randomLength = 5
)

// Names are the values of a template's variables other than .random.
type Names struct {
	// Cluster is the Cluster's name, .cluster.name.
	Cluster string
	// ControlPlane is the KThreesControlPlane's name, .kthreesControlPlane.name.
	ControlPlane string
}

// Generate renders a new Machine name; an empty template means DefaultTemplate.
func Generate(tmpl string, names Names) (string, error) {
	parts, err := parseTemplate(orDefault(tmpl))
	if err != nil {
		return "", err
	}
	return shorten(render(parts, names, utilrand.String(randomLength))), nil
}

// Check says why a template cannot name Machines, or returns nil. It renders the
// template for sample names twice with two different .random values: a template whose
// name does not change with .random would give two Machines the same name (a
// .random that only shows in a part that shortening cuts off is fine: the cut name
// gets a random suffix). The rendered sample must be a valid object name.
func Check(tmpl string) error {
	parts, err := parseTemplate(orDefault(tmpl))
	if err != nil {
		return err
	}
	sample := Names{Cluster: "cluster", ControlPlane: "kthreescontrolplane"}
	first := render(parts, sample, "bbbbb")
	if first == render(parts, sample, "ccccc") {
		return errors.New("the name must depend on {{ .random }}, else two Machines would get the same name; add {{ .random }}, for example \"" + DefaultTemplate + "\"")
	}
	if name := shorten(first); len(validation.IsDNS1123Subdomain(name)) > 0 {
		return fmt.Errorf("renders names that are not valid object names (for example %q: %s); use lowercase letters, digits, '-' and '.'",
			name, strings.Join(validation.IsDNS1123Subdomain(name), "; "))
	}
	return nil
}

func orDefault(tmpl string) string {
	if tmpl == "" {
		return DefaultTemplate
	}
	return tmpl
}

// shorten cuts a name that is too long and makes it unique again with a random
// suffix, as Cluster API does.
func shorten(name string) string {
	if len(name) <= maxNameLength {
		return name
	}
	return name[:maxNameLength-randomLength] + utilrand.String(randomLength)
}
