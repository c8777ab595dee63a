// Text for the byte-level GPT: a corpus of bytes split 90% / 10% into training and validation
// text (the peer's split), and the sources: any file as bytes (`text:FILE`), Debian's `fortunes`
// package joined as the peer joins it, or a synthetic text generated from the seed.
#pragma once

#include "data/dataset.h" // DataError

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace plab {

struct TextCorpus {
    std::string name;
    std::vector<std::uint8_t> train, validation;
};

// Splits bytes at 90% (the first 90% train). Throws DataError (naming `name`) when either part
// is shorter than context + 1 bytes (no window would fit).
TextCorpus splitText(std::string name, std::vector<std::uint8_t> bytes, int context);

// The file's bytes. Throws DataError naming the file when it cannot be read or is too short.
TextCorpus loadTextFile(const std::string& path, int context);

// Where Debian's fortunes package puts its files.
inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";
// The regular files of dir (sorted by name; `.dat` files and links skipped) joined with "\n",
// as ../shared/peers/gpt_torch.py reads them. Throws DataError naming the directory and the
// package to install when it is missing.
TextCorpus loadFortunes(int context, const std::string& dir = kFortunesDir);

// The built-in text (the GPT's default data), from the seed alone, `bytes` long: sentences of a
// made-up language. A lexicon of 400 lower-case words (2-9 letters, Zipf-distributed
// frequencies); each word has 4 likely successors, so the text has structure at the letter
// level (words), the word level (successors) and the sentence level (capitals, commas, full
// stops, a newline every few sentences). On 2 MiB from seed 1 a byte bigram model reaches 3.41
// bits/byte (bigramBitsPerByte) and the tiny GPT in FP32 0.89 bits/byte after 1000 steps (`bench
// gpt --data synthetic`): there is much to learn beyond the bigrams.
TextCorpus makeSyntheticText(std::uint64_t seed, std::size_t bytes, int context);

// A byte bigram model's validation loss in bits per byte: counts from the training text with
// add-one smoothing, the cross-entropy on the validation text. The baseline any model should beat.
double bigramBitsPerByte(const TextCorpus& corpus);

// Random training windows as the peer draws them: `batch` starts in [0, size - context - 1),
// inputs text[s, s + T) and targets text[s + 1, s + T + 1), written as (B, T) byte matrices.
void sampleWindows(const std::vector<std::uint8_t>& text, int batch, int context,
                   std::mt19937_64& rng, std::uint8_t* inputs, std::uint8_t* targets);

} // namespace plab
