package script

import (
	"errors"
	"os"
	"syscall"
)

const backstopWhat = "none"

// backstopBy is what stops a worker at its backstop.
const backstopBy = "by the OS"

func backstopRoom(maxMemory int64) int64 { return 0 }

// errWorkerUnbounded is why run_script's worker refuses to run here.
var errWorkerUnbounded = errors.New("run_script is not available on Windows: specgate bounds a script's memory and CPU " +
	"with OS limits on its worker process (rlimits on Linux and macOS), which it does not set on Windows, " +
	"and a script without them could take the server's memory; run specgate on Linux, macOS or WSL for run_script")

func workerSupported() error { return errWorkerUnbounded }

func workerAttr() *syscall.SysProcAttr { return nil }

func limitSelf(maxMemory int64, cpuSeconds int) error { return errWorkerUnbounded }

func peakRSS(*os.ProcessState) int64 { return 0 }
