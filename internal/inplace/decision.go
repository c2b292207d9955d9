package inplace

import (
	"slices"
	"strings"

	"github.com/capk3s/capk3s/internal/specdiff"
)

// A Decision is what the extension can do for one change of a machine (or of a
// MachineSet's machine template): JSON patches that, applied to the current objects,
// cover the changes k3s applies in place, and a reason for each change it refuses.
// CAPI applies the patches to the current objects and compares them with the desired
// ones: anything left uncovered makes it roll the machine out instead.
type Decision struct {
	// MachinePatch, BootstrapPatch and InfraPatch are JSON patch operations (RFC 6902)
	// on the Machine (or MachineSet), the KThreesConfig (or its template) and the
	// infrastructure machine (or its template); nil when nothing of it is covered.
	MachinePatch, BootstrapPatch, InfraPatch []PatchOp
	// Covered lists the changed fields the patches cover, e.g. "Machine spec.version".
	Covered []string
	// Refused explains each changed field that needs a new machine.
	Refused []string
	// TargetVersion is the desired k3s version when the change covers it, else "".
	TargetVersion string
}

// PatchOp is one JSON patch operation.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Objects are the JSON forms (as unstructured maps) of a machine's three objects, or
// of a MachineSet and its two templates. Bootstrap may be nil (no bootstrap config).
type Objects struct {
	Machine, Bootstrap, Infra map[string]any
}

// Paths of the specs the extension reads: a Machine's, and a MachineSet's machine
// template's, with the same layout of their bootstrap and infrastructure objects.
var (
	machineBase    = []string{"spec"}
	machineSetBase = []string{"spec", "template", "spec"}
)

// DecideMachine decides for a control-plane Machine (CanUpdateMachine).
func DecideMachine(cur, des Objects) Decision {
	return decide(cur, des, machineBase)
}

// DecideMachineSet decides for a MachineSet's machine template (CanUpdateMachineSet).
func DecideMachineSet(cur, des Objects) Decision {
	return decide(cur, des, machineSetBase)
}

func decide(cur, des Objects, base []string) Decision {
	d := Decision{}
	curVersion, desVersion := effectiveVersion(cur, base), effectiveVersion(des, base)
	versionOK, versionReason := true, ""
	if curVersion != desVersion {
		versionOK, versionReason = versionStep(curVersion, desVersion)
	}

	for _, c := range specdiff.Diff(specAt(cur.Machine, base), specAt(des.Machine, base)) {
		field := strings.Join(c.Path, ".")
		switch {
		case slices.Contains(specdiff.InPlaceIgnoredMachineFields, c.Path[0]):
		case field == "version" && versionOK:
			d.MachinePatch = append(d.MachinePatch, patchOp(c, base))
			d.Covered = append(d.Covered, "Machine spec.version")
		case field == "version":
			d.Refused = append(d.Refused, versionReason)
		case field == "failureDomain":
			d.Refused = append(d.Refused, "Machine spec.failureDomain: a machine cannot move to another failure domain")
		default:
			d.Refused = append(d.Refused, "Machine spec."+field+": not a change k3s can apply in place")
		}
	}
	if cur.Bootstrap != nil || des.Bootstrap != nil {
		for _, c := range specdiff.Diff(specAt(cur.Bootstrap, base), specAt(des.Bootstrap, base)) {
			field := strings.Join(c.Path, ".")
			if field == "version" && versionOK {
				d.BootstrapPatch = append(d.BootstrapPatch, patchOp(c, base))
				d.Covered = append(d.Covered, "KThreesConfig spec.version")
				continue
			}
			if field == "version" {
				d.Refused = append(d.Refused, versionReason)
				continue
			}
			d.Refused = append(d.Refused, "KThreesConfig spec."+field+": "+bootstrapRefusal(c.Path))
		}
	}
	for _, c := range specdiff.Diff(specAt(cur.Infra, base), specAt(des.Infra, base)) {
		field := strings.Join(c.Path, ".")
		if field == "providerID" && len(base) == len(machineBase) {
			// The infrastructure provider's own record of the machine, which a desired
			// object computed from the template lacks; the machine keeps it.
			d.InfraPatch = append(d.InfraPatch, patchOp(c, base))
			continue
		}
		d.Refused = append(d.Refused, "infrastructure machine spec."+field+
			": the infrastructure of a running machine is not changed in place")
	}
	if versionOK && curVersion != desVersion && len(d.Covered) > 0 {
		d.TargetVersion = desVersion
	}
	d.Refused = slices.Compact(d.Refused)
	return d
}

// bootstrapRefusal says why a KThreesConfig field needs a new machine. The bootstrap
// data is run once, when a machine first boots; the upgrade only replaces k3s's
// binary and restarts it with the config.yaml it has.
func bootstrapRefusal(path []string) string {
	top := path[0]
	sub := ""
	if len(path) > 1 {
		sub = path[1]
	}
	switch {
	case top == "serverConfig" && slices.Contains([]string{"clusterCidr", "serviceCidr", "clusterDNS", "clusterDomain"}, sub):
		return "the cluster's network is fixed when it is created"
	case top == "serverConfig" && (sub == "datastore" || sub == "etcd"):
		return "the datastore is chosen when a server first starts"
	case top == "serverConfig" || top == "agentConfig":
		return "k3s's config.yaml is written when the machine first boots; an in-place upgrade keeps it"
	default:
		return "the bootstrap data runs only when the machine first boots"
	}
}

// effectiveVersion is the k3s version a machine runs: its KThreesConfig's version
// when set, else the Machine's (as the bootstrap provider installs it).
func effectiveVersion(o Objects, base []string) string {
	if v, ok := specAt(o.Bootstrap, base)["version"].(string); ok && v != "" {
		return v
	}
	v, _ := specAt(o.Machine, base)["version"].(string)
	return v
}

// specAt is the map at path inside obj; an empty map when absent.
func specAt(obj map[string]any, path []string) map[string]any {
	cur := obj
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return map[string]any{}
		}
		cur = next
	}
	return cur
}

// patchOp is the JSON patch operation that sets the changed field, under base, to
// its desired value.
func patchOp(c specdiff.Change, base []string) PatchOp {
	segs := make([]string, 0, len(base)+len(c.Path))
	for _, s := range append(slices.Clone(base), c.Path...) {
		// RFC 6901 escaping.
		segs = append(segs, strings.NewReplacer("~", "~0", "/", "~1").Replace(s))
	}
	p := "/" + strings.Join(segs, "/")
	if c.Removed {
		return PatchOp{Op: "remove", Path: p}
	}
	return PatchOp{Op: "add", Path: p, Value: c.Desired}
}

// Message is the one-line summary of a decision, for the response and the log.
func (d Decision) Message() string {
	var parts []string
	if len(d.Covered) > 0 {
		parts = append(parts, "can update in place: "+strings.Join(d.Covered, ", "))
	}
	if len(d.Refused) > 0 {
		parts = append(parts, "needs a rollout: "+strings.Join(d.Refused, "; "))
	}
	if len(parts) == 0 {
		return "no changes"
	}
	return strings.Join(parts, "; ")
}
