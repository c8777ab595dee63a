// precision-lab-cli: the headless front end of the Precision Lab core. No Qt.
#include "cli_commands.h"

#if PLAB_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

#include <cstdio>
#include <exception>
#include <vector>

int main(int argc, char** argv) {
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
        plab::cli::addDevicesCommand(app),
    };

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    try {
        for (const plab::cli::Command& command : commands)
            if (command.app->parsed())
                return command.run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "precision-lab-cli: %s\n", e.what());
        return 2;
    }
    return 0;
}
