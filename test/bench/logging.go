package main

import (
	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// benchLogger keeps the reconcilers quiet: at hundreds of clusters their info logs
// would cost more than what is measured. -v shows errors.
func benchLogger(verbose bool) logr.Logger {
	if !verbose {
		return logr.Discard()
	}
	return zap.New(zap.Level(zapcore.ErrorLevel))
}
