package main

import (
	"context"

	"github.com/go-logr/logr"
)

// Requests are attributed to the controller whose reconcile made them. controller-runtime
// puts a logger carrying "controller", <name> into every reconcile's context, and
// client-go hands that context to the HTTP request; attributingSink remembers the name
// as it passes through WithValues, so the request counter can read it back from the
// request's context. Requests outside any reconcile (informers' lists and watches, the
// ClusterCache's probes) are attributed to outsideReconcile.
//
// Why not one client per controller: the providers build clients of their own inside
// SetupWithManager (capk3s's Secret cache, CAPI's secret caching client), which a
// client handed to the reconciler would miss; the context reaches all of them.

// outsideReconcile names requests made outside any controller's reconcile.
const outsideReconcile = "(informers and other)"

// attributingSink wraps the process's log sink (nil when logs are discarded).
type attributingSink struct {
	inner      logr.LogSink
	controller string
}

var _ logr.LogSink = attributingSink{}

func withAttribution(l logr.Logger) logr.Logger {
	return logr.New(attributingSink{inner: l.GetSink()})
}

// controllerOf is the controller whose reconcile ctx belongs to, or outsideReconcile.
func controllerOf(ctx context.Context) string {
	l, err := logr.FromContext(ctx)
	if err != nil {
		return outsideReconcile
	}
	if s, ok := l.GetSink().(attributingSink); ok && s.controller != "" {
		return s.controller
	}
	return outsideReconcile
}

func (s attributingSink) Init(info logr.RuntimeInfo) {
	if s.inner != nil {
		s.inner.Init(info)
	}
}

func (s attributingSink) Enabled(level int) bool { return s.inner != nil && s.inner.Enabled(level) }

func (s attributingSink) Info(level int, msg string, kv ...any) {
	if s.inner != nil {
		s.inner.Info(level, msg, kv...)
	}
}

func (s attributingSink) Error(err error, msg string, kv ...any) {
	if s.inner != nil {
		s.inner.Error(err, msg, kv...)
	}
}

func (s attributingSink) WithValues(kv ...any) logr.LogSink {
	out := s
	if s.inner != nil {
		out.inner = s.inner.WithValues(kv...)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok && k == "controller" {
			if v, ok := kv[i+1].(string); ok {
				out.controller = v
			}
		}
	}
	return out
}

func (s attributingSink) WithName(name string) logr.LogSink {
	out := s
	if s.inner != nil {
		out.inner = s.inner.WithName(name)
	}
	return out
}
