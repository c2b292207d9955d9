package envtest

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitFor polls condition every interval until it reports true, returns an error, or
// ctx ends. It is for observing other processes (apiserver, garbage collector) in
// tests; controllers use watches instead.
func WaitFor(ctx context.Context, interval time.Duration, condition func(context.Context) (bool, error)) error {
	return wait.PollUntilContextCancel(ctx, interval, true, condition)
}

// Eventually is WaitFor bounded by timeout.
func Eventually(ctx context.Context, timeout time.Duration, condition func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return WaitFor(ctx, 50*time.Millisecond, condition)
}
