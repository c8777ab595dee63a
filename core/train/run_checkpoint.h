// RunCheckpoint: what a stopped run needs to go on from the step it stopped at, bit for bit as
// if it had never stopped: the parameters, the optimiser's moments, the loss scaler's state, the
// amax histories of delayed scaling, the data order and its generator, the step and epoch, and
// the session's configs (the one in effect and the one that replays the run). A session writes
// DIR/checkpoint.bin when it is stopped (the user, a signal, a sweep's stop: Slurm's preemption
// sends SIGTERM) and removes it when the run ends with a result; `train --resume`, a resumed
// sweep and the app's Compare go on from it.
//
// The file: "PLABCKPT" and a format version, a JSON header, named byte blobs (floats as their
// IEEE bits, little-endian as on every x86-64), then an FNV-1a 64 checksum of everything before
// it, so that a torn or edited file is refused rather than resumed from.
#pragma once

#include "engine/tensor_ops.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace plab {

inline constexpr const char* kCheckpointFile = "checkpoint.bin";

class RunCheckpoint {
public:
    nlohmann::json header = nlohmann::json::object();

    void putFloats(const std::string& name, const std::vector<float>& values);
    void putDoubles(const std::string& name, const std::vector<double>& values);
    void putWords(const std::string& name, const std::vector<std::uint64_t>& values);
    void putBytes(const std::string& name, std::string bytes);
    bool has(const std::string& name) const { return m_blobs.count(name) != 0; }
    // Each throws RecordError naming the part when it is missing or not a whole number of
    // values; `expected` (when not 0) is the count the reader needs.
    std::vector<float> floats(const std::string& name, std::size_t expected = 0) const;
    std::vector<double> doubles(const std::string& name) const;
    std::vector<std::uint64_t> words(const std::string& name) const;
    const std::string& bytes(const std::string& name) const;

    // Written atomically (a temporary file synced, then renamed): a stop that dies while it
    // writes leaves the previous checkpoint, or none. Throws RecordError.
    void write(const std::string& path) const;
    // Throws RecordError naming the file and what is wrong with it (not a checkpoint, another
    // format version, cut short, a checksum that does not match).
    static RunCheckpoint read(const std::string& path);

private:
    std::map<std::string, std::string> m_blobs;
};

// The parts every run keeps: an engine tensor (copied through the host), a generator's state.
void putTensor(RunCheckpoint& checkpoint, const std::string& name, TensorOps& ops, Tensor t);
void restoreTensor(const RunCheckpoint& checkpoint, const std::string& name, TensorOps& ops,
                   Tensor t);
void putGenerator(RunCheckpoint& checkpoint, const std::string& name,
                  const std::mt19937_64& generator);
void restoreGenerator(const RunCheckpoint& checkpoint, const std::string& name,
                      std::mt19937_64& generator);

} // namespace plab
