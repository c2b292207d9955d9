package envtest

// EtcdURL is the client URL of the management apiserver's etcd, for tests that must
// put objects into storage exactly as other software left them, past the apiserver's
// conversion and admission.
func (e *Environment) EtcdURL() string {
	return e.env.ControlPlane.Etcd.URL.String()
}
