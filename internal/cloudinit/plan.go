package cloudinit

import (
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// plan is what a machine must do, whatever the format it is told in: the files to
// write, in order, and the shell commands to run, in order. It is computed and
// checked once, so that cloud-config and Ignition carry the same files and
// commands, and a spec that renders in one format renders in the other.
type plan struct {
	role Role
	// files have their defaults applied (owner, permissions); Encoding and Content
	// are still as the user declared them, so each encoder can carry the bytes in
	// its own way.
	files []File
	// commands are preK3sCommands, the k3s install, postK3sCommands and the
	// sentinel, each one sh command line.
	commands []string
	// os is the OS setup (bootCommands, ntp, users, diskSetup, mounts).
	os osSetup
	// additional is the user's fragment, merged by the encoder of its format.
	additional bootstrapv1.AdditionalUserData
	// userFiles are spec.files, which an Ignition fragment may not write again.
	userFiles []bootstrapv1.File
}

// newPlan resolves and checks everything that does not depend on the format.
func newPlan(in Input) (*plan, error) {
	version, err := k3s.InstallVersion(in.Version)
	if err != nil {
		return nil, err
	}
	if err := checkInput(in); err != nil {
		return nil, err
	}

	var files fileSet
	for _, c := range in.Certificates {
		if err := files.addCertificate(c); err != nil {
			return nil, err
		}
	}
	if in.Datastore != nil {
		if err := files.addDatastoreFiles(in.Datastore); err != nil {
			return nil, err
		}
	}
	if in.Role != Agent {
		if err := files.addEtcdFiles(in.EtcdS3); err != nil {
			return nil, err
		}
	}
	k3sConfig, err := renderK3sConfig(in)
	if err != nil {
		return nil, err
	}
	if err := files.addGenerated(k3sConfigPath, k3sConfig); err != nil {
		return nil, err
	}
	if reg := in.Spec.AgentConfig.Registries; reg != nil {
		regYAML, caFiles, err := renderRegistries(reg, in.RegistryCredentials)
		if err != nil {
			return nil, err
		}
		if err := files.addGenerated(registriesPath, regYAML); err != nil {
			return nil, err
		}
		for _, ca := range caFiles {
			if err := files.addGenerated(ca.path, ca.content); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range in.Files {
		if err := files.addUser(f); err != nil {
			return nil, err
		}
	}

	cmds, err := runCommands(in, version)
	if err != nil {
		return nil, err
	}
	setup, err := newOSSetup(in)
	if err != nil {
		return nil, err
	}
	return &plan{role: in.Role, files: files.entries, commands: cmds, os: setup,
		additional: in.Spec.AdditionalUserData, userFiles: in.Spec.Files}, nil
}
