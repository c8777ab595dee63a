// The CLI's stop signals while it runs children (compare, sweep, a Slurm task): the first SIGINT,
// SIGTERM or SIGHUP is noted instead of ending the process, so that the children are passed it
// once (core/sweep/sweep_executor.h) and each writes its summary; the handler then restores the
// default action, so a second one ends the parent at once (its children, told by
// PR_SET_PDEATHSIG, still stop cleanly).
#pragma once

#include "sweep/run_launcher.h"

#include <csignal>
#include <optional>

namespace plab::cli {

void catchStopSignals();
int stopSignal(); // the signal caught, 0 when none
// The executor's stop hook for children: the caught signal, passed on to them; empty while none.
std::optional<StopRequest> stopRequestFromSignal();

} // namespace plab::cli
