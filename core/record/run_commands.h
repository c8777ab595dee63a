// Run commands: how another process steers an emulated PyTorch run (precision_lab.torch.emulate)
// through its record folder. The steering side (the app's controls, `precision-lab-cli steer`)
// appends each command to DIR/commands.jsonl, one JSON object per line; the emulating process
// only reads that file: it looks at the file's size at every step boundary (one stat), applies
// the new commands there, and records what it did with each (an event, and for a change an entry
// of config.json's timeline) in the tables it alone writes. The file is what was asked; the record
// is what happened.
//
// A command is {"set": PATCH, "from": WHO} (PATCH: a config patch as a timeline entry's:
// scaling.* or recipe) or {"action": "pause" | "resume" | "step", "from": WHO}. Senders hold the
// file's lock (flock) while they append, so the commands of two apps following one run are
// serialised: each is one whole line, numbered by its place in the file.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace plab {

class RunRecord;

inline constexpr const char* kCommandsFile = "commands.jsonl";
// A command line longer than this is refused (a recipe with per-stage overrides is a few KB).
inline constexpr std::size_t kMaxCommandBytes = 1u << 20;

struct RunCommand {
    std::int64_t number = 0; // its line in the file, from 1
    nlohmann::json body;     // the parsed line (null when it is not JSON)
    std::string error;       // why the line is not a command it could read, or empty
};

// Why the run in dir cannot take commands now, in one line naming dir (empty: it can): only an
// emulated PyTorch run whose script still writes it, in a folder this process may write, is
// steerable. A watched run only observes its script; an ended run, a copy or a run of the core's
// own trainer has no one who would read a command. Throws RecordError when dir holds no record.
std::string whyNotSteerable(const std::string& dir);
std::string whyNotSteerable(const RunRecord& record); // the same, on a record open already

// Appends one command to dir's commands file (created if needed) as one whole line; returns its
// number. Throws RecordError with whyNotSteerable's reason when the run takes no commands, or
// naming the file when it cannot be written.
std::int64_t sendRunCommand(const std::string& dir, const nlohmann::json& command);

// The reading side: the commands appended since the last poll, whole lines only (a line still
// being written waits for the next poll).
class CommandInbox {
public:
    explicit CommandInbox(std::string dir);
    // Cheap when nothing was written: one stat. Throws nothing: a file that cannot be read
    // yields one RunCommand whose error says why (once).
    std::vector<RunCommand> poll();

private:
    std::string m_path;
    std::uint64_t m_offset = 0; // bytes of whole lines read so far
    std::int64_t m_lines = 0;
    bool m_reportedUnreadable = false;
};

} // namespace plab
