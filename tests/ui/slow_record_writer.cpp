// A stand-in for a watched PyTorch script, for test_follow_run: another process that writes a
// watched run's record slowly through the core's WatchRecorder. No Qt.
//   slow_record_writer DIR STEPS MS_PER_STEP
#include "torch_runs/watch_recorder.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>
#include <thread>

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: slow_record_writer DIR STEPS MS_PER_STEP\n");
        return 2;
    }
    try {
        plab::WatchSettings settings;
        settings.formats = {"fp16", "fp8-e4m3", "nvfp4"};
        settings.stageNames = {"fc1", "fc2", "head"};
        settings.every = 5;
        settings.description = {{"model", "SlowWriter"}};
        plab::WatchRecorder recorder(argv[1], settings);
        const int steps = std::atoi(argv[2]);
        const auto pause = std::chrono::milliseconds(std::atoi(argv[3]));
        std::mt19937 random(7);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (int step = 1; step <= steps; ++step) {
            plab::WatchedStep s;
            s.step = step;
            s.loss = 2.0 / step;
            s.learningRate = 0.1;
            s.scale = 1024.0;
            s.statistics = (step - 1) % settings.every == 0;
            if (s.statistics)
                for (std::size_t stage = 0; stage < settings.stageNames.size(); ++stage)
                    for (plab::TensorRole role :
                         {plab::TensorRole::Activations, plab::TensorRole::ActivationGradients}) {
                        plab::CapturedTensor t;
                        t.stage = stage;
                        t.role = role;
                        t.rowLength = 32;
                        // Gradients small enough that FP16 flushes some of them.
                        const float size =
                            role == plab::TensorRole::ActivationGradients ? 1e-6f : 1.0f;
                        for (int i = 0; i < 32 * 16; ++i)
                            t.values.push_back(size * normal(random));
                        s.tensors.push_back(std::move(t));
                    }
            recorder.submit(std::move(s));
            recorder.flush(); // committed before the pause: the reader's clock starts here
            std::this_thread::sleep_for(pause);
        }
        recorder.close();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "slow_record_writer: %s\n", e.what());
        return 1;
    }
    return 0;
}
