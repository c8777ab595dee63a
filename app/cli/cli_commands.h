// The CLI's subcommands. Each registers its options on a CLI11 app and runs when selected.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace plab::cli {

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
Command addDevicesCommand(CLI::App& app);
// `bench train`, registered under `bench`: sets `action` when it is the subcommand parsed.
void addBenchTrainSubcommand(CLI::App* bench, std::function<int()>& action);

} // namespace plab::cli
