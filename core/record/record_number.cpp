// recordNumber: std::to_chars' shortest round-trip form.
#include "record/record_number.h"

#include <charconv>
#include <cmath>

namespace plab {

std::string recordNumber(double v) {
    if (std::isnan(v))
        return "nan";
    if (std::isinf(v))
        return v > 0 ? "inf" : "-inf";
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, ec == std::errc() ? end : buf);
}

} // namespace plab
