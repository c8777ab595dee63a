// precision-lab-cli: the headless front end of the Precision Lab core. No Qt.
#include "cli_commands.h"
#include "record/record_error.h"
#include "util/nearest_name.h"
#include "util/printable_text.h"

#if PLAB_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

namespace {

// Messages are one line of bounded length: an argument of megabytes is not echoed whole.
std::string oneLine(const std::string& text) {
    // Line breaks become spaces (a message is one line); every other control byte and invalid
    // UTF-8 is shown escaped, not obeyed: a NUL in a key used to end the message there, and an
    // ESC in a format name coloured the terminal.
    std::string flat(text);
    for (char& c : flat)
        if (c == '\n' || c == '\r' || c == '\t')
            c = ' ';
    std::string message = plab::printableText(flat);
    // A long value is cut in the middle: the reason, at the end, stays.
    constexpr std::size_t kHead = 240, kTail = 160;
    if (message.size() > kHead + kTail + 40)
        message = message.substr(0, kHead) + " ... (" + std::to_string(message.size()) +
                  " characters) ... " + message.substr(message.size() - kTail);
    return message;
}

// An unknown first word, named with the nearest command; empty when it is one (or an option).
std::string unknownCommand(const CLI::App& app, const std::string& word) {
    if (word.empty() || word[0] == '-')
        return {};
    std::string all;
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands({})) {
        const std::string& name = sub->get_name();
        if (name == word)
            return {};
        all += (all.empty() ? "" : ", ") + name;
        names.push_back(name);
    }
    std::string message = "unknown command \"" + oneLine(word) + "\"";
    if (const std::string nearest = plab::nearestName(word, names); !nearest.empty())
        message += "; did you mean \"" + nearest + "\"?";
    return message + " (commands: " + all + ")";
}

// An option given with an empty value ("--out ''") is refused, not taken as absent.
void refuseEmptyValues(const CLI::App& app) {
    for (const CLI::App* sub : app.get_subcommands({})) {
        if (!sub->parsed())
            continue;
        for (const CLI::Option* option : sub->get_options())
            for (const std::string& value : option->results())
                if (value.empty() && option->get_type_size_max() > 0)
                    throw std::invalid_argument(option->get_name() + ": empty value");
        refuseEmptyValues(*sub);
    }
}

// A comma-separated list with an empty item ("fp32," or "fp32,,bf16"): CLI11 drops the empty
// item, so that a typo ran one preset fewer without a word. Read from the arguments as typed.
void refuseEmptyListItems(const CLI::App& app, int argc, char** argv) {
    for (const CLI::App* sub : app.get_subcommands({})) {
        if (!sub->parsed())
            continue;
        for (const CLI::Option* option : sub->get_options()) {
            if (option->get_delimiter() != ',')
                continue;
            for (const std::string& name : option->get_lnames()) {
                const std::string flag = "--" + name;
                for (int i = 1; i < argc; ++i) {
                    const std::string arg = argv[i];
                    if (arg == "--") // a script sweep's command follows: its own arguments
                        break;
                    std::string value;
                    if (arg == flag && i + 1 < argc)
                        value = argv[i + 1];
                    else if (arg.rfind(flag + "=", 0) == 0)
                        value = arg.substr(flag.size() + 1);
                    else
                        continue;
                    if (!value.empty() && (value.front() == ',' || value.back() == ',' ||
                                           value.find(",,") != std::string::npos))
                        throw std::invalid_argument(flag + ": \"" + value +
                                                    "\" has an empty item (expected names "
                                                    "separated by single commas)");
                }
            }
        }
        refuseEmptyListItems(*sub, argc, argv);
    }
}

// Whatever the program printed must have reached its destination (a full disk, /dev/full, a
// closed pipe): a lost result (or --help, --version) is an error, not a success. CLI11 prints
// help through std::cout, which shares stdout's buffer.
int outputReached(int status) {
    if (std::fflush(stdout) != 0 || std::ferror(stdout) || std::cout.fail()) {
        std::fprintf(stderr, "precision-lab-cli: cannot write the output (%s)\n",
                     std::strerror(errno));
        return status != 0 ? status : plab::cli::kExitRecordFailed;
    }
    return status;
}

} // namespace

int main(int argc, char** argv) {
    // A file-size limit (ulimit -f) kills a writer with SIGXFSZ, leaving no summary; ignored, the
    // write fails with EFBIG instead and takes the full disk's path: exit 4, one message, a
    // summary. Children (compare, sweep) inherit it.
    std::signal(SIGXFSZ, SIG_IGN);
    CLI::App app{"Precision Lab: emulate low-precision number formats and training, headless",
                 "precision-lab-cli"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "precision-lab-cli " PLAB_VERSION);
#if PLAB_HAVE_CUDA
    plab::registerCudaBackend(); // the composition root: the core only knows the interface
#endif
    const std::vector<plab::cli::Command> commands = {
        plab::cli::addFormatsCommand(app), plab::cli::addQuantizeCommand(app),
        plab::cli::addBenchCommand(app),   plab::cli::addTrainCommand(app),
        plab::cli::addPresetsCommand(app), plab::cli::addCompareCommand(app),
        plab::cli::addDevicesCommand(app), plab::cli::addExportCommand(app),
        plab::cli::addSweepCommand(app),   plab::cli::addSteerCommand(app),
        plab::cli::addAdviseCommand(app),
    };

    if (argc > 1)
        if (const std::string unknown = unknownCommand(app, argv[1]); !unknown.empty()) {
            std::fprintf(stderr, "precision-lab-cli: %s\n", unknown.c_str());
            return plab::cli::kExitBadInput;
        }
    try {
        app.parse(argc, argv);
        refuseEmptyValues(app);
        refuseEmptyListItems(app, argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return outputReached(app.exit(e));
    } catch (const CLI::CallForAllHelp& e) {
        return outputReached(app.exit(e));
    } catch (const CLI::CallForVersion& e) {
        return outputReached(app.exit(e));
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "precision-lab-cli: %s (see --help)\n", oneLine(e.what()).c_str());
        return plab::cli::kExitBadInput;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "precision-lab-cli: %s\n", oneLine(e.what()).c_str());
        return plab::cli::kExitBadInput;
    }
    int status = 0;
    bool outputFailed = false; // said already
    try {
        for (const plab::cli::Command& command : commands)
            if (command.app->parsed()) {
                status = command.run();
                break;
            }
    } catch (const plab::RecordWriteError& e) { // the disk refused, not the input
        std::fprintf(stderr, "precision-lab-cli: %s\n", oneLine(e.what()).c_str());
        status = plab::cli::kExitRecordFailed;
    } catch (const plab::cli::OutputError& e) {
        std::fprintf(stderr, "precision-lab-cli: %s\n", oneLine(e.what()).c_str());
        status = plab::cli::kExitRecordFailed;
        outputFailed = true;
    } catch (const std::bad_alloc&) { // the library's text, "std::bad_alloc", says nothing
        std::fprintf(stderr, "precision-lab-cli: out of memory: this run needs more memory than "
                             "the machine can give (try a smaller model, batch or data set)\n");
        status = plab::cli::kExitBadInput;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "precision-lab-cli: %s\n", oneLine(e.what()).c_str());
        status = plab::cli::kExitBadInput;
    }
    return outputFailed ? status : outputReached(status);
}
