// editDistance(): one row of the dynamic programme at a time.
#include "util/nearest_name.h"

#include <algorithm>

namespace plab {

std::size_t editDistance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::string nearestName(const std::string& word, const std::vector<std::string>& candidates) {
    constexpr std::size_t kMaxEdits = 2;
    std::string nearest;
    std::size_t best = kMaxEdits + 1;
    for (const std::string& c : candidates)
        if (const std::size_t d = editDistance(word, c); d < best) {
            best = d;
            nearest = c;
        }
    return nearest;
}

} // namespace plab
