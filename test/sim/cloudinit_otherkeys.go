package sim

import (
	"fmt"

	"sigs.k8s.io/yaml"
)

// otherCloudConfigKeys are cloud-config keys that cloud-init applies to the OS and
// that nothing k3s needs depends on: a user's own cloud-config fragment may carry
// them beside what capk3s writes. Each is a top-level property of cloud-init's
// schema (cloudinit/config/schemas/schema-cloud-config-v1.json, in 22.4 and 25.1,
// the versions test/bootos boots) of a module that runs in the config or final
// stage and needs no network: cc_timezone, cc_locale, cc_final_message,
// cc_ca_certs, cc_set_passwords, cc_ssh, cc_keyboard, cc_rsyslog,
// cc_power_state_change. The simulator reads them as cloud-init would (the data
// parses) and acts on none of them; any other key still fails the strict read, so
// a misspelt key capk3s writes is caught, and keys whose effect a machine here
// could not have (apt, packages: they need a network) are refused.
var otherCloudConfigKeys = map[string]bool{
	"timezone": true, "locale": true, "final_message": true, "ca_certs": true, "ssh_pwauth": true, "ssh_deletekeys": true, "keyboard": true,
	"rsyslog": true, "power_state": true,
}

// withoutOtherKeys returns the cloud-config without otherCloudConfigKeys, and those
// keys apart. Data without any of them is returned as it is.
func withoutOtherKeys(data []byte) ([]byte, map[string]any, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("cloud-config: %w", err)
	}
	others := map[string]any{}
	for k, v := range doc {
		if otherCloudConfigKeys[k] {
			others[k] = v
			delete(doc, k)
		}
	}
	if len(others) == 0 {
		return data, nil, nil
	}
	rest, err := yaml.Marshal(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("cloud-config: %w", err)
	}
	return append([]byte("#cloud-config\n"), rest...), others, nil
}
