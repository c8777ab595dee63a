#include "data/text_corpus.h"

#include "util/bounded_read.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>

namespace plab {

TextCorpus splitText(std::string name, std::vector<std::uint8_t> bytes, int context) {
    const std::size_t split = bytes.size() * 9 / 10;
    const auto need = static_cast<std::size_t>(context) + 2;
    if (split < need || bytes.size() - split < need)
        throw DataError(name + ": " + std::to_string(bytes.size()) + " bytes of text; at least " +
                        std::to_string(need * 10) + " expected (context " +
                        std::to_string(context) + " + 2 in each of the 90% / 10% parts)");
    TextCorpus c;
    c.name = std::move(name);
    c.train.assign(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(split));
    c.validation.assign(bytes.begin() + static_cast<std::ptrdiff_t>(split), bytes.end());
    return c;
}

TextCorpus loadTextFile(const std::string& path, int context) {
    // A text the tiny GPT trains on is megabytes (enwik8: 100 MB); /dev/zero never ends.
    constexpr std::size_t kMaxBytes = std::size_t{256} << 20;
    std::string text;
    switch (readBounded(path, kMaxBytes, text)) {
    case BoundedRead::Ok:
        break;
    case BoundedRead::IsADirectory:
        throw DataError("text file " + path + ": is a directory (expected a text file)");
    case BoundedRead::TooLarge:
        throw DataError("text file " + path + ": larger than " + describeBytes(kMaxBytes) +
                        " (the most this reader takes)");
    case BoundedRead::CannotOpen:
    case BoundedRead::CannotRead:
        throw DataError("text file " + path + ": cannot be read");
    }
    return splitText("text:" + path, std::vector<std::uint8_t>(text.begin(), text.end()), context);
}

TextCorpus loadFortunes(int context, const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw DataError("fortunes: " + dir +
                        " not found (install Debian's fortunes package: apt-get install fortunes)");
    std::vector<fs::path> files;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
        const fs::path& p = e.path();
        if (p.extension() == ".dat" || fs::is_symlink(fs::symlink_status(p, ec)) ||
            !fs::is_regular_file(p, ec))
            continue;
        files.push_back(p);
    }
    std::sort(files.begin(), files.end(),
              [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
    std::vector<std::uint8_t> joined;
    std::string part;
    for (std::size_t i = 0; i < files.size(); ++i) {
        if (readBounded(files[i].string(), std::size_t{64} << 20, part) != BoundedRead::Ok)
            throw DataError("fortunes: " + files[i].string() +
                            " cannot be read (or is larger than 64 MiB)");
        if (i > 0)
            joined.push_back('\n');
        joined.insert(joined.end(), part.begin(), part.end());
    }
    return splitText("fortunes", std::move(joined), context);
}

TextCorpus makeSyntheticText(std::uint64_t seed, std::size_t bytes, int context) {
    std::mt19937_64 rng(seed);
    constexpr int kWords = 400, kSuccessors = 4;
    std::uniform_int_distribution<int> length(2, 9), letter(0, 25), word(0, kWords - 1);
    // Letters drawn from English-like frequencies, so words look pronounceable-ish and the
    // letter bigrams carry information.
    static constexpr std::array<double, 26> kLetterWeights = {
        8.2, 1.5, 2.8, 4.3, 12.7, 2.2, 2.0, 6.1, 7.0, 0.2, 0.8, 4.0, 2.4,
        6.7, 7.5, 1.9, 0.1, 6.0,  6.3, 9.1, 2.8, 1.0, 2.4, 0.2, 2.0, 0.1};
    std::discrete_distribution<int> letters(kLetterWeights.begin(), kLetterWeights.end());
    std::vector<std::string> lexicon(kWords);
    for (std::string& w : lexicon) {
        const int n = length(rng);
        for (int i = 0; i < n; ++i)
            w.push_back(static_cast<char>('a' + letters(rng)));
    }
    // Zipf frequencies for the sentence starts and the random jumps.
    std::vector<double> zipf(kWords);
    for (int i = 0; i < kWords; ++i)
        zipf[static_cast<std::size_t>(i)] = 1.0 / (i + 1);
    std::discrete_distribution<int> common(zipf.begin(), zipf.end());
    std::vector<std::array<int, kSuccessors>> successors(kWords);
    for (auto& s : successors)
        for (int& w : s)
            w = common(rng);
    std::discrete_distribution<int> pick({0.5, 0.25, 0.15, 0.1});
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::uniform_int_distribution<int> sentenceWords(4, 12), paragraph(2, 5);

    std::string text;
    text.reserve(bytes + 64);
    int sentences = 0, untilBreak = paragraph(rng);
    while (text.size() < bytes) {
        int w = common(rng);
        const int n = sentenceWords(rng);
        for (int i = 0; i < n; ++i) {
            std::string s = lexicon[static_cast<std::size_t>(w)];
            if (i == 0)
                s[0] = static_cast<char>(s[0] - 'a' + 'A');
            text += s;
            if (i + 1 < n)
                text += unit(rng) < 0.1 ? ", " : " ";
            // Mostly a likely successor; sometimes any common word.
            w = unit(rng) < 0.9
                    ? successors[static_cast<std::size_t>(w)][static_cast<std::size_t>(pick(rng))]
                    : common(rng);
        }
        text += '.';
        if (++sentences == untilBreak) {
            text += '\n';
            sentences = 0;
            untilBreak = paragraph(rng);
        } else {
            text += ' ';
        }
    }
    text.resize(bytes);
    return splitText("synthetic text (seed " + std::to_string(seed) + ")",
                     std::vector<std::uint8_t>(text.begin(), text.end()), context);
}

double bigramBitsPerByte(const TextCorpus& corpus) {
    std::vector<double> counts(256 * 256, 1.0), rows(256, 256.0); // add-one
    for (std::size_t i = 0; i + 1 < corpus.train.size(); ++i) {
        counts[corpus.train[i] * 256u + corpus.train[i + 1]] += 1.0;
        rows[corpus.train[i]] += 1.0;
    }
    double bits = 0.0;
    const std::size_t n = corpus.validation.size();
    for (std::size_t i = 0; i + 1 < n; ++i) {
        const std::uint8_t a = corpus.validation[i], b = corpus.validation[i + 1];
        bits -= std::log2(counts[a * 256u + b] / rows[a]);
    }
    return n < 2 ? 0.0 : bits / static_cast<double>(n - 1);
}

void sampleWindows(const std::vector<std::uint8_t>& text, int batch, int context,
                   std::mt19937_64& rng, std::uint8_t* inputs, std::uint8_t* targets) {
    const auto t = static_cast<std::size_t>(context);
    std::uniform_int_distribution<std::size_t> start(0, text.size() - t - 2);
    for (int b = 0; b < batch; ++b) {
        const std::size_t s = start(rng);
        std::copy_n(text.begin() + static_cast<std::ptrdiff_t>(s), t, inputs + b * t);
        std::copy_n(text.begin() + static_cast<std::ptrdiff_t>(s + 1), t, targets + b * t);
    }
}

} // namespace plab
