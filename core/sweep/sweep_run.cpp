// planSweepRuns(): the points x seeds loop, written once; claimSweepFolder(): one sweep a folder.
#include "sweep/sweep_run.h"

#include "record/record_file.h"

#include <filesystem>
#include <stdexcept>

namespace plab {

std::vector<SweepRun> planSweepRuns(const Sweep& sweep, const std::string& dir, int threads) {
    std::vector<SweepRun> runs;
    const std::vector<SweepPoint> points = sweep.points();
    for (std::size_t p = 0; p < points.size(); ++p)
        for (int seed = 1; seed <= sweep.seeds; ++seed) {
            SweepRun r;
            r.point = p;
            r.seed = seed;
            r.relative = points[p].name(sweep) + "/seed-" + std::to_string(seed);
            r.dir = sweep.runFolder(dir, points[p], seed);
            r.config = sweep.runConfigJson(points[p], seed);
            r.config["threads"] = threads;
            runs.push_back(std::move(r));
        }
    return runs;
}

std::vector<SweepRun> planComparisonRuns(const Sweep& sweep, const std::string& dir) {
    std::vector<SweepRun> runs;
    const std::vector<SweepPoint> points = sweep.points();
    for (std::size_t p = 0; p < points.size(); ++p) {
        SweepRun r;
        r.point = p;
        r.relative = points[p].name(sweep);
        r.dir = dir + "/" + r.relative;
        r.config = sweep.runConfigJson(points[p], 1);
        runs.push_back(std::move(r));
    }
    return runs;
}

namespace {

// "steps 5 -> 50, presets [fp32] -> [bf16,fp32]": the fields of two sweeps that differ.
std::string differences(const nlohmann::json& before, const nlohmann::json& now) {
    std::string out;
    for (const auto& [key, value] : now.items()) {
        const nlohmann::json old = before.contains(key) ? before.at(key) : nlohmann::json();
        if (old != value)
            out += (out.empty() ? "" : ", ") + key + " " + old.dump() + " -> " + value.dump();
    }
    for (const auto& [key, value] : before.items())
        if (!now.contains(key))
            out += (out.empty() ? "" : ", ") + key + " " + value.dump() + " -> (none)";
    return out;
}

} // namespace

void claimSweepFolder(const std::string& dir, const Sweep& sweep, const nlohmann::json& extra) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir))
        throw std::runtime_error(dir + ": cannot create the sweep folder" +
                                 (ec ? " (" + ec.message() + ")" : std::string()));
    const std::string file = dir + "/sweep.json";
    // The baseline only picks the table's reference: the same runs under another one are fine.
    nlohmann::json now = sweep.toJson();
    now.erase("baseline");
    if (std::filesystem::exists(file)) {
        nlohmann::json before = readSweepFile(file).toJson();
        before.erase("baseline");
        if (before != now)
            throw std::invalid_argument(file + " holds another sweep (" + differences(before, now) +
                                        "): choose another --out, or resume that sweep with "
                                        "`sweep --file " +
                                        file + " --out " + dir + "`");
    }
    nlohmann::json record = sweep.toJson();
    for (const auto& [key, value] : extra.items())
        record[key] = value;
    writeFileAtomically(file, record.dump(2) + "\n");
}

} // namespace plab
