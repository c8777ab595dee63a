// The name a mistyped word most likely meant ("fp16-amq" -> "fp16-amp"), for messages that list
// what was expected: the candidate at the smallest edit distance, when it is close enough (at
// most 2 edits) to be a typo rather than another word.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace plab {

// Levenshtein distance: insertions, deletions and substitutions of one character each.
std::size_t editDistance(const std::string& a, const std::string& b);

// The nearest candidate within 2 edits, or empty.
std::string nearestName(const std::string& word, const std::vector<std::string>& candidates);

} // namespace plab
