package main

import (
	"log/slog"
	"os"
	"time"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/mcpserver"
	"github.com/specgate/specgate/pkg/runs"
	"github.com/specgate/specgate/pkg/script"
)

// scriptWorkerCommand is the hidden subcommand that runs one script under
// OS limits for its parent (see script.Worker).
const scriptWorkerCommand = "script-worker"

// scriptOptions turns the scripts keys into run_script's options: each run
// in a worker process, this binary itself, when its path is known; else in
// process, with a warning (the memory bound is then only sampled).
func scriptOptions(cfg *config.Config, store runs.Store, log *slog.Logger) mcpserver.ScriptOptions {
	sc := cfg.Scripts
	o := mcpserver.ScriptOptions{
		AllowWrites: sc.AllowWrites, Timeout: time.Duration(sc.Timeout), AnswerWithin: time.Duration(sc.AnswerWithin), MaxCalls: sc.MaxCalls,
		MaxConcurrent: sc.MaxConcurrent, PerPrincipal: sc.PerPrincipal, MaxMemory: int64(sc.MaxMemory),
	}
	if sc.AnswerWithin == 0 {
		o.AnswerWithin = -1 // answer at the end
	}
	o.Runs = runs.NewManager(runs.Options{Store: store, Keep: time.Duration(cfg.ResponseTTL), Logger: log})
	if err := script.WorkerSupported(); err != nil {
		log.Warn("run_script is refused here: every call of it answers script_error", "reason", err.Error())
	}
	exe, err := os.Executable()
	if err != nil {
		log.Warn("run_script runs in process: the specgate binary cannot be found to start script workers", "err", err)
		o.Runner = script.InProcess{}
		return o
	}
	o.Runner = &script.Worker{Path: exe, Args: []string{scriptWorkerCommand}}
	return o
}
