// The CLI's subcommands. Each registers its options on a CLI11 app and runs when selected.
#pragma once

#include <stdexcept>

#include <CLI/CLI.hpp>

#include <functional>
#include <limits>
#include <string>

namespace plab::cli {

// Exit statuses (README: The CLI; docs/cli.md). 0: success; 2: bad input (an option, a config, a
// data file, a run folder that is locked or holds an earlier run), refused before anything runs; 3:
// training ended without completing (diverged, failed); 4: the run record could not be written
// (full disk, folder removed), every whole row written before kept; 128 + N: stopped by signal N
// (SIGINT 130, SIGTERM 143, SIGHUP 129) with the summary written.
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitTrainingFailed = 3;
inline constexpr int kExitRecordFailed = 4;

// Output that could not be written (a full disk, /dev/full, a closed pipe): exit status
// kExitRecordFailed, with the system's reason in the message.
class OutputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Option check: a whole number from least to most ("--steps: -1: expected a whole number >= 1",
// "--threads: 1000: expected a whole number from 0 to 256").
inline CLI::Validator wholeNumberBetween(long long least, long long most) {
    const std::string range = most == std::numeric_limits<long long>::max()
                                  ? ">= " + std::to_string(least)
                                  : "from " + std::to_string(least) + " to " + std::to_string(most);
    return CLI::Validator(
        [least, most, range](std::string& text) {
            long long v = 0;
            std::size_t used = 0;
            try {
                v = std::stoll(text, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used == 0 || used != text.size() || v < least || v > most)
                return "\"" + text.substr(0, 40) + "\": expected a whole number " + range;
            return std::string();
        },
        range);
}
inline CLI::Validator wholeNumberAtLeast(long long least) {
    return wholeNumberBetween(least, std::numeric_limits<long long>::max());
}
// Option check: an unsigned 64-bit whole number (a seed): digits only, no sign, no wrap-around.
inline CLI::Validator unsigned64() {
    return CLI::Validator(
        [](std::string& text) {
            const bool digits = !text.empty() && text.size() <= 20 &&
                                text.find_first_not_of("0123456789") == std::string::npos;
            if (digits && (text.size() < 20 || text <= "18446744073709551615"))
                return std::string();
            return "\"" + text.substr(0, 40) +
                   "\": expected a whole number from 0 to 18446744073709551615";
        },
        "UINT64");
}

// A registered subcommand and its action, which runs after parsing and returns the exit code.
// Actions throw std::exception with a one-line message for bad input.
struct Command {
    CLI::App* app;
    std::function<int()> run;
};

Command addFormatsCommand(CLI::App& app);
Command addQuantizeCommand(CLI::App& app);
Command addBenchCommand(CLI::App& app);
Command addTrainCommand(CLI::App& app);
Command addPresetsCommand(CLI::App& app);
Command addCompareCommand(CLI::App& app);
Command addSweepCommand(CLI::App& app);
Command addDevicesCommand(CLI::App& app);
Command addExportCommand(CLI::App& app);
Command addSteerCommand(CLI::App& app);
Command addAdviseCommand(CLI::App& app);
// `bench train`, registered under `bench`: sets `action` when it is the subcommand parsed.
void addBenchTrainSubcommand(CLI::App* bench, std::function<int()>& action);
// `bench gpt`, registered under `bench` likewise.
void addBenchGptSubcommand(CLI::App* bench, std::function<int()>& action);

} // namespace plab::cli
