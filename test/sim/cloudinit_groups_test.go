package sim

import (
	"strings"
	"testing"
)

// A user whose primary_group nothing creates is never created by cloud-init, so
// the machine's data is not applied: the simulated boot fails and says why.
func TestParseCloudConfigPrimaryGroups(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, users, wantErr string
	}{
		{"missing group", "users:\n- name: ops\n  primary_group: opsteam\n", `primary_group "opsteam" does not exist`},
		{"created first", "groups: [opsteam]\nusers:\n- name: ops\n  primary_group: opsteam\n", ""},
		{"created with groups", "users:\n- name: ops\n  primary_group: opsteam\n  groups: docker\n", ""},
		{"image group", "users:\n- name: ops\n  primary_group: users\n", ""},
		{"earlier user's group", "users:\n- name: ops\n- name: dev\n  primary_group: ops\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseCloudConfig([]byte(minimal("", "") + tc.users))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("parseCloudConfig: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
