// The recipe advisor: the ladder judged role by role from the record's statistics rows.
#include "advise/recipe_advice.h"

#include "numerics/block_scheme.h"
#include "numerics/format_spec.h"
#include "numerics/tensor_cast.h"
#include "record/run_record.h"
#include "train/recipe_candidates.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

namespace plab {
namespace {

std::string percent(double share) {
    // "100%", "12%", "1.2%", "0.079%": two significant digits, never an exponent above 1e-4%.
    char text[32];
    const double pct = 100.0 * share;
    std::snprintf(text, sizeof text, pct >= 10.0 ? "%.0f%%" : "%.2g%%", pct);
    return text;
}

// A failing share beside its limit, with the digits that tell them apart: 1.0498% flushed
// against a limit of 1% reads "1.05%", never "1%".
std::string percentAbove(double share, double limit) {
    const std::string limitText = percent(limit);
    std::string text = percent(share);
    char more[40];
    for (int digits = 3; digits <= 6 && text == limitText; ++digits) {
        std::snprintf(more, sizeof more, "%.*g%%", digits, 100.0 * share);
        text = more;
    }
    return text;
}

// BioNeMo's underflow bands (its precision debugging guide): a flushed share below 0.5% is fine,
// to 2% a warning, to 4% critical, above severe. Shown beside each verdict, whatever the limit.
std::string underflowBand(double share) {
    const char* band = share < 0.005   ? "fine"
                       : share <= 0.02 ? "a warning"
                       : share <= 0.04 ? "critical"
                                       : "severe";
    return std::string(band) + " in BioNeMo's underflow bands";
}

std::string decibels(double db) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f dB", db);
    return text;
}

std::string roleWords(TensorRole role) {
    std::string words(toString(role));
    std::replace(words.begin(), words.end(), '_', ' ');
    return words;
}

bool readWhole(const std::string& text, std::int64_t& value) {
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    return ec == std::errc() && ptr == end && !text.empty();
}

// The worst value of one criterion over the window and where it was.
struct Worst {
    double value = 0.0;
    std::int64_t step = 0;
    bool seen = false;
    void atLeast(double v, std::int64_t s) { // keep the largest
        if (!seen || v > value)
            *this = {v, s, true};
    }
    void atMost(double v, std::int64_t s) { // keep the smallest
        if (!seen || v < value)
            *this = {v, s, true};
    }
};

struct Tally {
    Worst flushed, overflow, sqnr, flushedBlocks, saturatedBlocks;
    std::size_t rows = 0;
};

using TallyKey = std::tuple<std::string, std::size_t, TensorRole>; // format, stage, role

FormatVerdict judge(const std::string& format, const Tally* tally, TensorRole role,
                    const AdviceCriteria& c, bool blockFormat) {
    FormatVerdict v;
    v.format = format;
    const std::string what = roleWords(role);
    if (format == "fp32") {
        v.outcome = FormatVerdict::Outcome::Meets;
        v.criterion = "exact";
        v.reason = "float32 keeps the values as they are";
        return v;
    }
    if (findRecipeCandidate(format) != nullptr && !candidateJudges(role)) {
        v.outcome = FormatVerdict::Outcome::NoData;
        v.reason = "a recipe keeps " + what + " (a product's output) in high precision";
        return v;
    }
    if (tally == nullptr || tally->rows == 0) {
        v.outcome = FormatVerdict::Outcome::NoData;
        v.reason = "no statistics of " + what + " in " + format + " in the window";
        return v;
    }
    // Each limit with the margin (AdviceCriteria::margin): a share limit times it (a limit of
    // 100%, off, stays off), the SQNR floor raised by the noise it leaves out.
    const bool margined = c.margin < 1.0;
    const auto shareLimit = [&](double limit) { return limit >= 1.0 ? limit : limit * c.margin; };
    const auto limitText = [&](double limit) {
        std::string text = "limit " + percent(limit);
        if (margined && limit < 1.0)
            text += ", " + percent(shareLimit(limit)) + " with the margin";
        return text;
    };
    // "FP4 all the way" (opt-in): a 4-bit entry on gradients is judged by its floor, a gradient
    // norm sqrt(3) times the noise's, instead of the SQNR floor.
    const bool fp4Floor =
        c.fp4GradientNoise &&
        (role == TensorRole::ActivationGradients || role == TensorRole::WeightGradients) &&
        ladderElementBits(format) <= 4;
    const double sqnrFloor = fp4Floor ? 20.0 * std::log10(std::sqrt(3.0)) : c.minSqnrDb;
    const double minSqnr = sqnrFloor + 10.0 * std::log10(1.0 / c.margin);
    auto fail = [&](const char* criterion, const Worst& w, const std::string& sentence) {
        v.outcome = FormatVerdict::Outcome::Fails;
        v.criterion = criterion;
        v.value = w.value;
        v.step = w.step;
        v.reason = sentence + " at step " + std::to_string(w.step);
        return v;
    };
    if (tally->flushed.value > shareLimit(c.maxFlushed)) {
        fail("flushed", tally->flushed,
             percentAbove(tally->flushed.value, shareLimit(c.maxFlushed)) + " of nonzero " + what +
                 " flushed (" + limitText(c.maxFlushed) + ")");
        v.reason += ", " + underflowBand(tally->flushed.value);
        return v;
    }
    if (tally->overflow.value > shareLimit(c.maxOverflow))
        return fail("overflow", tally->overflow,
                    percentAbove(tally->overflow.value, shareLimit(c.maxOverflow)) +
                        " of nonzero " + what + " past the format's max (" +
                        limitText(c.maxOverflow) + ")");
    if (fp4Floor && tally->sqnr.seen && tally->sqnr.value < minSqnr) {
        char ratio[64];
        std::snprintf(ratio, sizeof ratio,
                      "%.2f (at least 1.73, sqrt 3, asked; %.2f with the margin)",
                      std::pow(10.0, tally->sqnr.value / 20.0), std::pow(10.0, minSqnr / 20.0));
        return fail("fp4_noise", tally->sqnr,
                    "gradient norm / quantisation noise " + std::string(ratio) +
                        ": FP4 all the way leaves FP4 here");
    }
    if (tally->sqnr.seen && tally->sqnr.value < minSqnr)
        return fail("sqnr", tally->sqnr,
                    "SQNR " + decibels(tally->sqnr.value) + " (at least " + decibels(c.minSqnrDb) +
                        " asked" + (margined ? ", " + decibels(minSqnr) + " with the margin" : "") +
                        ")");
    if (blockFormat && tally->flushedBlocks.value > shareLimit(c.maxFlushedBlocks))
        return fail("flushed_blocks", tally->flushedBlocks,
                    percentAbove(tally->flushedBlocks.value, shareLimit(c.maxFlushedBlocks)) +
                        " of blocks with a nonzero value flushed whole (" +
                        limitText(c.maxFlushedBlocks) + ")");
    if (blockFormat && tally->saturatedBlocks.value > shareLimit(c.maxSaturatedBlocks))
        return fail("saturated_blocks", tally->saturatedBlocks,
                    percentAbove(tally->saturatedBlocks.value, shareLimit(c.maxSaturatedBlocks)) +
                        " of blocks clipped (" + limitText(c.maxSaturatedBlocks) + ")");
    v.outcome = FormatVerdict::Outcome::Meets;
    // The number closest to its limit says how much room there was.
    v.criterion = "flushed";
    v.value = tally->flushed.value;
    v.step = tally->flushed.step;
    v.reason = "worst " + percent(tally->flushed.value) + " flushed (step " +
               std::to_string(tally->flushed.step) + ", " + underflowBand(tally->flushed.value) +
               ")";
    if (tally->sqnr.seen)
        v.reason += ", worst SQNR " + decibels(tally->sqnr.value) + " (step " +
                    std::to_string(tally->sqnr.step) + ")";
    return v;
}

// The PyTorch module types whose forward is a product that a recipe casts (emulate's, and the
// linear layer MultiheadAttention keeps as out_proj).
bool isProductType(const std::string& type) {
    static const std::array<std::string_view, 9> kProducts = {"Linear",
                                                              "LazyLinear",
                                                              "NonDynamicallyQuantizableLinear",
                                                              "Conv1d",
                                                              "Conv2d",
                                                              "Conv3d",
                                                              "Embedding",
                                                              "MultiheadAttention",
                                                              "Bilinear"};
    return std::find(kProducts.begin(), kProducts.end(), type) != kProducts.end();
}

} // namespace

double parseShare(const std::string& text, const std::string& what) {
    std::string number = text;
    double divisor = 1.0;
    if (!number.empty() && number.back() == '%') {
        number.pop_back();
        divisor = 100.0;
    }
    double value = 0.0;
    const char* end = number.data() + number.size();
    const auto [ptr, ec] = std::from_chars(number.data(), end, value);
    value /= divisor;
    if (number.empty() || ec != std::errc() || ptr != end || !(value >= 0.0 && value <= 1.0))
        throw std::invalid_argument(what + ": \"" + text.substr(0, 40) +
                                    "\": expected a share from 0 to 1 or 0% to 100% (e.g. 1%)");
    return value;
}

void parseStepWindow(const std::string& text, AdviceCriteria& c) {
    std::int64_t a = 0, b = 0;
    const std::size_t colon = text.find(':');
    if (text == "all") {
        c.lastSteps = 0;
        c.firstStep = c.lastStep = 0;
        return;
    }
    if (text.rfind("last:", 0) == 0 && readWhole(text.substr(5), a) && a >= 1) {
        c.lastSteps = a;
        c.firstStep = c.lastStep = 0;
        return;
    }
    if (colon != std::string::npos && readWhole(text.substr(0, colon), a) &&
        readWhole(text.substr(colon + 1), b) && a >= 1 && b >= a) {
        c.lastSteps = 0;
        c.firstStep = a;
        c.lastStep = b;
        return;
    }
    throw std::invalid_argument("--steps: \"" + text.substr(0, 40) +
                                "\": expected all, last:N (N >= 1) or A:B (1 <= A <= B)");
}

void checkCriteria(const AdviceCriteria& c) {
    std::vector<std::string> canonical; // "float8_e4m3fn" and "fp8-e4m3" are one format
    for (const std::string& f : c.ladder) {
        canonical.push_back(ladderName(f)); // FormatError names an unknown one
        for (std::size_t j = 0; j + 1 < canonical.size(); ++j)
            if (canonical[j] == canonical.back())
                throw std::invalid_argument("--ladder: " + canonical.back() + " is named twice");
    }
    auto share = [](double v, const char* what) {
        if (!(v >= 0.0 && v <= 1.0))
            throw std::invalid_argument(std::string(what) + ": " + std::to_string(v) +
                                        ": expected a share from 0 to 1");
    };
    share(c.maxFlushed, "--max-flushed");
    share(c.maxOverflow, "--max-overflow");
    share(c.maxFlushedBlocks, "--max-flushed-blocks");
    share(c.maxSaturatedBlocks, "--max-saturated-blocks");
    if (!(c.margin > 0.0 && c.margin <= 1.0))
        throw std::invalid_argument("--margin: " + std::to_string(c.margin) +
                                    ": expected a share above 0 and at most 1 (0.5: within half "
                                    "of each limit; 1: at the limits)");
    if (!std::isfinite(c.minSqnrDb))
        throw std::invalid_argument("--min-sqnr: expected a finite number of dB");
    if (c.lastSteps < 0 || c.firstStep < 0 || c.lastStep < c.firstStep)
        throw std::invalid_argument("--steps: expected all, last:N or A:B");
}

std::string ladderName(const std::string& format) {
    if (format == "fp32" || findRecipeCandidate(format) != nullptr)
        return format;
    if (findBlockFormat(format) != nullptr)
        return TensorCast(TensorCastSpec{.format = format}).name();
    // One format, one name: "e5m10" is fp16, "e4m3:fn" and "float8_e4m3fn" are fp8-e4m3.
    const FormatSpec spec = parseFormat(format);
    for (const FormatSpec& named : namedFormats())
        if (named.sameParameters(spec))
            return named.name;
    return spec.name;
}

int ladderElementBits(const std::string& format) {
    if (const RecipeCandidate* candidate = findRecipeCandidate(format)) {
        const TrainConfig config = candidateConfig(*candidate);
        int bits = 0;
        for (TensorRole role : kAllRoles)
            if (candidateJudges(role))
                bits = std::max(
                    bits, config.recipe.roles[static_cast<std::size_t>(role)].format.totalBits());
        return bits;
    }
    if (const BlockFormat* block = findBlockFormat(format))
        return block->element.totalBits();
    return parseFormat(format).totalBits();
}

bool ladderCastsScaled(const std::string& format) {
    return findRecipeCandidate(format) != nullptr || findBlockFormat(format) != nullptr;
}

bool ladderScalesBlocks(const std::string& format) {
    if (const RecipeCandidate* candidate = findRecipeCandidate(format))
        return isBlockScaling(candidateConfig(*candidate).scalingPolicy);
    return findBlockFormat(format) != nullptr;
}

std::vector<std::string> defaultLadder(const std::vector<std::string>& recorded) {
    std::vector<std::string> ladder;
    const bool anyCandidate = std::any_of(recorded.begin(), recorded.end(), [](const auto& f) {
        return findRecipeCandidate(f) != nullptr;
    });
    if (anyCandidate) {
        for (const std::string& f : kDefaultLadder)
            if (f != "fp32" && std::find(recorded.begin(), recorded.end(), f) != recorded.end())
                ladder.push_back(f);
    } else {
        for (const std::string& f : recorded)
            if (f != "fp32" && std::find(ladder.begin(), ladder.end(), f) == ladder.end())
                ladder.push_back(f);
        // Fewest bits first; a candidate before a plain format of as many (it is scaled), and
        // candidates in the default ladder's order.
        const auto width = [](const std::string& f) {
            int bits = 32; // a name this build does not know: last
            try {
                bits = ladderElementBits(f);
            } catch (const std::exception&) {
            }
            const auto at = std::find(kDefaultLadder.begin(), kDefaultLadder.end(), f);
            return std::tuple(bits, findRecipeCandidate(f) != nullptr ? 0 : 1,
                              at - kDefaultLadder.begin());
        };
        std::stable_sort(
            ladder.begin(), ladder.end(),
            [&](const std::string& a, const std::string& b) { return width(a) < width(b); });
    }
    ladder.push_back("fp32");
    return ladder;
}

std::size_t ladderRank(const AdviceCriteria& c, const std::string& format) {
    if (format == "fp32")
        return c.ladder.size();
    const auto it = std::find(c.ladder.begin(), c.ladder.end(), format);
    return it == c.ladder.end() ? c.ladder.size() : static_cast<std::size_t>(it - c.ladder.begin());
}

namespace {

// The statistics rows since the last reset: a watched run's one judged format at a time, a
// trained or emulated run's all at once.
std::vector<StatsRow> readRows(const RunRecord& record) {
    if (!record.judgesSeveralFormats())
        return record.statsRows();
    std::vector<StatsRow> rows;
    for (const std::string& f : record.judgedFormats()) {
        std::vector<StatsRow> some = record.statsRows(f);
        rows.insert(rows.end(), some.begin(), some.end());
    }
    return rows;
}

struct Window {
    std::int64_t from = 1, to = 0;
    bool holds(std::int64_t step) const { return step >= from && step <= to; }
};

Window windowOf(const AdviceCriteria& c, const std::vector<StatsRow>& rows) {
    std::int64_t newest = 0;
    for (const StatsRow& r : rows)
        newest = std::max(newest, r.step);
    if (c.lastStep > 0)
        return {c.firstStep, c.lastStep};
    return {c.lastSteps > 0 ? newest - c.lastSteps + 1 : 1, newest};
}

// What the rows of the window say, per (format, stage, role), and what else the advice needs.
struct Tallies {
    std::map<TallyKey, Tally> byKey;
    std::vector<std::int64_t> steps;                // the statistics steps in the window, in order
    std::vector<std::string> formats;               // every format the rows name
    std::vector<std::array<bool, kRoleCount>> seen; // per stage: the roles recorded
};

// Recorded formats' names as the ladder spells them (a trained run records its config's
// spelling: "e5m10" is fp16), each looked up once; a name this build does not know stays as it
// is.
class RecordedNames {
public:
    const std::string& operator()(const std::string& format) {
        const auto [it, added] = m_names.try_emplace(format);
        if (added) {
            try {
                it->second = ladderName(format);
            } catch (const std::exception&) {
                it->second = format;
            }
        }
        return it->second;
    }

private:
    std::map<std::string, std::string> m_names;
};

Tallies tally(std::vector<StatsRow> rows, const Window& window, std::size_t stages) {
    Tallies t;
    t.seen.assign(stages, {});
    RecordedNames canonical;
    for (StatsRow& r : rows) {
        r.format = canonical(r.format);
        if (std::find(t.formats.begin(), t.formats.end(), r.format) == t.formats.end())
            t.formats.push_back(r.format);
        if (!window.holds(r.step) || r.role == TensorRole::MasterWeights ||
            r.role == TensorRole::OptimizerState)
            continue;
        if (t.steps.empty() || t.steps.back() != r.step)
            t.steps.push_back(r.step);
        t.seen[r.stage][static_cast<std::size_t>(r.role)] = true;
        Tally& k = t.byKey[{r.format, r.stage, r.role}];
        ++k.rows;
        const auto count = [&](QuantClass c) {
            return static_cast<double>(r.counts[static_cast<std::size_t>(c)]);
        };
        double total = 0.0;
        for (std::uint64_t n : r.counts)
            total += static_cast<double>(n);
        // Of the nonzero inputs, NaNs included: the one definition flushedShare() uses too.
        const double nonzero = total - count(QuantClass::Zero);
        k.flushed.atLeast(r.flushedShare(), r.step);
        k.overflow.atLeast(nonzero > 0 ? count(QuantClass::Overflow) / nonzero : 0.0, r.step);
        if (r.error.measured() && r.error.signalSq > 0)
            k.sqnr.atMost(r.error.sqnrDb(), r.step);
        if (r.blocks > 0)
            k.saturatedBlocks.atLeast(
                static_cast<double>(r.saturatedBlocks) / static_cast<double>(r.blocks), r.step);
    }
    std::sort(t.steps.begin(), t.steps.end());
    t.steps.erase(std::unique(t.steps.begin(), t.steps.end()), t.steps.end());
    return t;
}

// Blocks flushed whole, from the block rows of the window: a watched run's name their format; a
// trained or emulated run casts each role in one format, so its block rows go with the tally of
// that role.
void tallyBlocks(const RunRecord& record, const Window& window, Tallies& t) {
    const bool several = record.judgesSeveralFormats();
    std::map<std::pair<std::size_t, TensorRole>, Tally*> castIn; // a role's one format's tally
    RecordedNames canonical;
    if (!several)
        for (auto& [key, k] : t.byKey)
            castIn[{std::get<1>(key), std::get<2>(key)}] = &k;
    for (const BlockRow& b : record.blockRows()) {
        if (!window.holds(b.step) || b.blocks == 0)
            continue;
        Tally* k = nullptr;
        if (several) {
            const auto it = t.byKey.find({canonical(b.format), b.stage, b.role});
            k = it == t.byKey.end() ? nullptr : &it->second;
        } else if (const auto it = castIn.find({b.stage, b.role}); it != castIn.end()) {
            k = it->second;
        }
        if (k != nullptr)
            k->flushedBlocks.atLeast(b.flushedBlockShare(), b.step);
    }
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names)
        out += (out.empty() ? "" : ",") + n;
    return out;
}

// A watched run's modules and their types: which stages are products, and the names a recipe
// gives them (emulate names a MultiheadAttention's input projection NAME.in_proj).
void markProducts(const RunRecord& record, RunAdvice& advice) {
    const std::vector<std::string>& names = record.stageNames();
    advice.products.assign(names.size(), true);
    advice.recipeNames = names;
    advice.moduleTypes.assign(names.size(), std::string());
    const nlohmann::json watch = record.meta("watch");
    if (!watch.is_object() || !watch.contains("modules") || !watch["modules"].is_array())
        return;
    for (const nlohmann::json& m : watch["modules"]) {
        if (!m.is_object() || !m.contains("name") || !m.contains("type") ||
            !m["name"].is_string() || !m["type"].is_string())
            continue;
        const auto it = std::find(names.begin(), names.end(), m["name"].get<std::string>());
        if (it == names.end())
            continue;
        const auto stage = static_cast<std::size_t>(it - names.begin());
        const std::string type = m["type"].get<std::string>();
        advice.products[stage] = isProductType(type);
        advice.moduleTypes[stage] = type;
        if (type == "MultiheadAttention")
            advice.recipeNames[stage] += ".in_proj";
    }
}

// A weight two modules share (nanoGPT's lm_head.weight is transformer.wte.weight) is recorded
// once, under its first module (the watch meta's tied_weights): each alias's weights are judged
// from those rows, so that every module computing with the weight gets its products and its
// recipe entry. Returns the aliases' stages with their owner's name.
std::map<std::size_t, std::string> judgeTiedWeightsFromTheirOwner(const RunRecord& record,
                                                                  Tallies& t) {
    std::map<std::size_t, std::string> aliases;
    const nlohmann::json watch = record.meta("watch");
    if (!watch.is_object() || !watch.contains("tied_weights") || !watch["tied_weights"].is_array())
        return aliases;
    const std::vector<std::string>& names = record.stageNames();
    const auto stageOf = [&](const nlohmann::json& parameter) -> std::optional<std::size_t> {
        if (!parameter.is_string())
            return std::nullopt;
        std::string module = parameter.get<std::string>();
        const std::size_t dot = module.rfind('.');
        if (dot == std::string::npos || module.substr(dot) != ".weight")
            return std::nullopt;
        module.resize(dot);
        const auto it = std::find(names.begin(), names.end(), module);
        if (it == names.end())
            return std::nullopt;
        return static_cast<std::size_t>(it - names.begin());
    };
    for (const nlohmann::json& tie : watch["tied_weights"]) {
        if (!tie.is_object() || !tie.contains("parameter") || !tie.contains("aliases") ||
            !tie["aliases"].is_array())
            continue;
        const std::optional<std::size_t> owner = stageOf(tie["parameter"]);
        if (!owner)
            continue;
        for (const nlohmann::json& alias : tie["aliases"]) {
            const std::optional<std::size_t> stage = stageOf(alias);
            if (!stage || *stage == *owner)
                continue;
            const auto w = static_cast<std::size_t>(TensorRole::Weights);
            t.seen[*stage][w] = t.seen[*owner][w];
            for (const std::string& f : t.formats)
                if (const auto it = t.byKey.find({f, *owner, TensorRole::Weights});
                    it != t.byKey.end())
                    t.byKey[{f, *stage, TensorRole::Weights}] = it->second;
            aliases[*stage] = tie["parameter"].get<std::string>();
        }
    }
    return aliases;
}

// Which ladder entries a module's role may take: any (each role alone), or those that cast
// under the module's one scaling policy (`scaledAs`, a scaled entry; empty: none, every role
// unscaled).
struct LayerScaling {
    bool settled = false; // false: each role on its own
    std::string scaledAs;
    bool allows(const std::string& format) const {
        if (!settled || format == "fp32")
            return true;
        if (ladderCastsScaled(format))
            return format == scaledAs;
        // Unscaled beside a scaled entry only where the range needs no scale (BF16).
        return scaledAs.empty() || !parseFormat(format).hasNarrowRange();
    }
};

// One module's role: the ladder walked, narrowest first, to the first format that meets every
// criterion (and that the module's scaling allows). blockFormat[i]: whether ladder format i is
// a block format.
RoleAdvice adviseRole(std::size_t stage, const std::string& module, TensorRole role,
                      const AdviceCriteria& c, const std::vector<bool>& blockFormat,
                      const Tallies& t, const LayerScaling& layer = {}) {
    RoleAdvice a;
    a.stage = stage;
    a.module = module;
    a.role = role;
    std::string rejected;
    for (std::size_t i = 0; i < c.ladder.size(); ++i) {
        const std::string& f = c.ladder[i];
        const auto it = t.byKey.find({f, stage, role});
        FormatVerdict v =
            judge(f, it == t.byKey.end() ? nullptr : &it->second, role, c, blockFormat[i]);
        a.verdicts.push_back(v);
        if (v.outcome == FormatVerdict::Outcome::Meets && layer.allows(f)) {
            a.chosen = f;
            a.summary = rejected + f + " chosen: " + v.reason;
            return a;
        }
        if (v.outcome == FormatVerdict::Outcome::Meets)
            rejected += f + " meets the criteria (" + v.reason + ") but " + module +
                        (layer.scaledAs.empty() ? " casts its roles unscaled"
                                                : " scales as " + layer.scaledAs) +
                        " (one scaling policy per layer, the narrowest for its roles "
                        "together); ";
        else
            rejected +=
                f + (v.outcome == FormatVerdict::Outcome::Fails ? " rejected: " : " not judged: ") +
                v.reason + "; ";
    }
    a.summary = rejected + "no format of the ladder meets the criteria";
    return a;
}

// Bits a role takes in a ladder entry (a candidate's format for that role): what the module's
// scaling is chosen to keep fewest.
int roleBits(const std::string& format, TensorRole role) {
    if (format.empty() || format == "fp32")
        return 32;
    if (const RecipeCandidate* candidate = findRecipeCandidate(format))
        return candidateConfig(*candidate)
            .recipe.roles[static_cast<std::size_t>(role)]
            .format.totalBits();
    return ladderElementBits(format);
}

// One scaling policy per layer: a recipe scales a layer one way (TE's autocast region, a torchao
// config per module), so where a module's product inputs chose two scaled entries, or a scaled
// one beside a narrow format judged unscaled, the module takes the policy (a scaled entry of the
// ladder, or none) that leaves those roles fewest bits together, earlier in the ladder on a tie;
// each role then takes the first entry that meets the criteria under it. What the advice says
// is then what the recipe export writes.
void settleLayerScaling(RunAdvice& advice, const AdviceCriteria& c,
                        const std::vector<bool>& blockFormat, const Tallies& t) {
    std::map<std::size_t, std::vector<RoleAdvice*>> inputs; // per product stage
    for (RoleAdvice& r : advice.roles)
        if ((r.stage >= advice.products.size() || advice.products[r.stage]) &&
            isProductInput(r.role))
            inputs[r.stage].push_back(&r);
    std::vector<LayerScaling> options;
    for (const std::string& f : c.ladder)
        if (ladderCastsScaled(f))
            options.push_back({true, f});
    options.push_back({true, ""});
    for (auto& [stage, roles] : inputs) {
        std::vector<std::string> scaled;
        bool narrowUnscaled = false;
        for (const RoleAdvice* r : roles) {
            if (r->chosen.empty() || r->chosen == "fp32")
                continue;
            if (ladderCastsScaled(r->chosen)) {
                if (std::find(scaled.begin(), scaled.end(), r->chosen) == scaled.end())
                    scaled.push_back(r->chosen);
            } else if (parseFormat(r->chosen).hasNarrowRange()) {
                narrowUnscaled = true;
            }
        }
        if (scaled.size() + (narrowUnscaled ? 1 : 0) < 2)
            continue; // one policy already
        std::vector<RoleAdvice> best;
        int bestBits = 0;
        for (const LayerScaling& option : options) {
            std::vector<RoleAdvice> settled;
            int bits = 0;
            for (const RoleAdvice* r : roles) {
                settled.push_back(adviseRole(stage, r->module, r->role, c, blockFormat, t, option));
                bits += roleBits(settled.back().chosen, r->role);
            }
            if (best.empty() || bits < bestBits) {
                best = std::move(settled);
                bestBits = bits;
            }
        }
        for (std::size_t i = 0; i < roles.size(); ++i)
            *roles[i] = std::move(best[i]);
    }
}

// A layer's three products, each in the wider of its operands' formats.
void adviseProducts(std::size_t stage, const std::string& module, RunAdvice& advice) {
    struct Product {
        const char* name;
        TensorRole a, b;
    };
    constexpr Product kProducts[] = {
        {"forward", TensorRole::Activations, TensorRole::Weights},
        {"data_gradient", TensorRole::ActivationGradients, TensorRole::Weights},
        {"weight_gradient", TensorRole::ActivationGradients, TensorRole::Activations},
    };
    // An operand not recorded (an embedding's indices, an attention's inner input): empty, the
    // other decides; one without a format of the ladder is fp32.
    auto formatOf = [&](TensorRole role) -> std::string {
        for (const RoleAdvice& r : advice.roles)
            if (r.stage == stage && r.role == role)
                return r.chosen.empty() ? "fp32" : r.chosen;
        return {};
    };
    for (const Product& p : kProducts) {
        GemmAdvice g{stage, module, p.name, p.a, p.b, {}, {}};
        const std::string fa = formatOf(p.a), fb = formatOf(p.b);
        if (fa.empty() && fb.empty()) {
            g.format = "fp32";
            g.reason = "neither operand recorded: fp32";
        } else if (fa.empty() || fb.empty()) {
            g.format = fa.empty() ? fb : fa;
            g.reason = roleWords(fa.empty() ? p.a : p.b) +
                       " not recorded: " + roleWords(fa.empty() ? p.b : p.a) + " decide";
        } else {
            const bool aWider = ladderRank(advice.criteria, fa) >= ladderRank(advice.criteria, fb);
            g.format = aWider ? fa : fb;
            g.reason = fa == fb ? "both operands take " + fa
                                : roleWords(aWider ? p.a : p.b) + " need " + g.format;
        }
        advice.gemms.push_back(std::move(g));
    }
}

} // namespace

RunAdvice adviseRun(const RunRecord& record, const AdviceCriteria& criteria) {
    checkCriteria(criteria);
    // The ladder in the record's spelling: "float8_e4m3fn" is fp8-e4m3 there.
    AdviceCriteria c = criteria;
    for (std::string& f : c.ladder)
        f = ladderName(f);
    RunAdvice advice;
    advice.runDir = record.dir();
    advice.watched = !record.meta("watch").is_null() || !record.meta("emulate").is_null();
    if (!advice.watched)
        advice.runConfig = record.config();

    const std::vector<StatsRow> rows = readRows(record);
    const Window window = windowOf(c, rows);
    const std::vector<std::string>& names = record.stageNames();
    Tallies t = tally(rows, window, names.size());
    if (t.steps.empty())
        throw std::invalid_argument(
            record.dir() + ": no statistics steps " +
            (rows.empty() ? std::string(record.summary().stopReason == "running" ? "recorded yet"
                                                                                 : "recorded")
                          : "from step " + std::to_string(window.from) + " to " +
                                std::to_string(window.to)) +
            ": nothing to advise from");
    tallyBlocks(record, window, t);
    const std::map<std::size_t, std::string> tied = judgeTiedWeightsFromTheirOwner(record, t);
    advice.firstStep = t.steps.front();
    advice.lastStep = t.steps.back();
    advice.statisticsSteps = t.steps.size();
    advice.recordedFormats = t.formats;
    if (c.ladder.empty())
        c.ladder = defaultLadder(t.formats);
    advice.criteria = c;
    std::vector<bool> blockFormat;
    for (const std::string& f : c.ladder)
        blockFormat.push_back(ladderScalesBlocks(f));
    // A ladder of FP32 alone advises FP32 (an FP32 run); one that names narrower formats must
    // name one the record holds.
    const auto recorded = [&](const std::string& f) {
        return std::find(t.formats.begin(), t.formats.end(), f) != t.formats.end();
    };
    if (std::any_of(c.ladder.begin(), c.ladder.end(),
                    [](const std::string& f) { return f != "fp32"; }) &&
        std::none_of(c.ladder.begin(), c.ladder.end(),
                     [&](const std::string& f) { return f != "fp32" && recorded(f); }))
        throw std::invalid_argument(record.dir() + ": holds no statistics in any format of the " +
                                    "ladder " + joined(c.ladder) + " (it recorded " +
                                    joined(t.formats) +
                                    "): give --ladder from those, narrowest first");
    // Varied: two steps of the window at different scales (the first step the window holds,
    // whatever the window's nominal start, sets the first scale).
    bool first = true;
    for (const StepScalars& s : record.steps())
        if (window.holds(s.step)) {
            if (!first && advice.lossScale != s.scale)
                advice.scaleVaried = true;
            advice.lossScale = s.scale;
            first = false;
        }
    markProducts(record, advice);
    for (std::size_t stage = 0; stage < names.size(); ++stage)
        for (TensorRole role : {TensorRole::Weights, TensorRole::Activations,
                                TensorRole::ActivationGradients, TensorRole::WeightGradients})
            if (t.seen[stage][static_cast<std::size_t>(role)]) // else not recorded (an inner input)
                advice.roles.push_back(adviseRole(stage, names[stage], role, c, blockFormat, t));
    settleLayerScaling(advice, c, blockFormat, t);
    for (RoleAdvice& r : advice.roles)
        if (const auto alias = tied.find(r.stage);
            alias != tied.end() && r.role == TensorRole::Weights)
            r.summary = "tied to " + alias->second + ", judged from its rows: " + r.summary;
    for (std::size_t stage = 0; stage < names.size(); ++stage)
        if (advice.products[stage] && t.seen[stage][static_cast<std::size_t>(TensorRole::Weights)])
            adviseProducts(stage, names[stage], advice);
    return advice;
}

} // namespace plab
