// precision_lab._quantize: the format table and the casts with their counts. It links only the
// core's numerics floor (plab_numerics), so `import precision_lab` and precision_lab.quantize
// load neither SQLite nor the trainers (core_module.cpp holds those).
#include "bindings.h"

PYBIND11_MODULE(_quantize, m) {
    m.doc() = "Precision Lab's casts: format casts with exact statistics";
    // A bad format spec (FormatError, a std::invalid_argument) reaches Python as the ValueError
    // pybind11 makes of it, with its one line.
    plab::python::bindQuantize(m);
}
