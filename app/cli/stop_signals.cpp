// No SA_RESTART: a caught signal interrupts the executor's short waits, which then look at it.
#include "stop_signals.h"

#include <initializer_list>

namespace plab::cli {
namespace {

volatile std::sig_atomic_t g_stopSignal = 0;

extern "C" void onChildRunsStopSignal(int signal) {
    g_stopSignal = signal;
    std::signal(signal, SIG_DFL);
}

} // namespace

void catchStopSignals() {
    struct sigaction action {};
    action.sa_handler = onChildRunsStopSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    for (int signal : {SIGINT, SIGTERM, SIGHUP})
        sigaction(signal, &action, nullptr);
}

int stopSignal() {
    return g_stopSignal;
}

std::optional<StopRequest> stopRequestFromSignal() {
    if (stopSignal() == 0)
        return std::nullopt;
    return StopRequest{stopSignal(), {}};
}

} // namespace plab::cli
