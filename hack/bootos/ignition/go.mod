module github.com/capk3s/capk3s/hack/bootos/ignition

go 1.26.0

require github.com/coreos/ignition/v2 v2.24.0
