package main

import (
	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// benchLogger keeps the reconcilers quiet: at hundreds of clusters their info logs
// would cost more than what is measured. -log-errors shows errors. Either way the logger
// carries each reconcile's controller name for the request counter (attribution.go).
func benchLogger(errors bool) logr.Logger {
	if !errors {
		return withAttribution(logr.Discard())
	}
	return withAttribution(zap.New(zap.Level(zapcore.ErrorLevel)))
}
