package k3smodel

import (
	"errors"
	"testing"
)

func TestResolvePlanVersion(t *testing.T) {
	if got, err := ResolvePlanVersion("v1.36.3+k3s1", ""); err != nil || got != "v1.36.3-k3s1" {
		t.Errorf("version: %q, %v; want v1.36.3-k3s1", got, err)
	}
	if _, err := ResolvePlanVersion("", ""); !errors.Is(err, ErrPlanUnresolvable) {
		t.Errorf("neither version nor channel: %v, want ErrPlanUnresolvable", err)
	}
	if _, err := ResolvePlanVersion("", "https://update.k3s.io/v1-release/channels/stable"); err == nil || errors.Is(err, ErrPlanUnresolvable) {
		t.Errorf("channel only: %v, want the simulator's own refusal", err)
	}
}
