// How the run record writes a number as text: "nan", "inf", "-inf" for those (never an empty
// cell, which means "not measured"), else the shortest text that reads back as the same double.
#pragma once

#include <string>

namespace plab {

std::string recordNumber(double v);

} // namespace plab
