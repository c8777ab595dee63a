#pragma once
// A share (0..1) as the views print it: "12.34%", two decimals, as the counters' tables do.
#include <QString>

namespace plab {

inline QString percentText(double share) {
    return QString::number(100.0 * share, 'f', 2) + QLatin1Char('%');
}

} // namespace plab
