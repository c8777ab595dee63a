// precision_lab._quantize: the format table and the casts with their counts. It links only the
// core's numerics floor (plab_numerics), so `import precision_lab` and precision_lab.quantize
// load neither SQLite nor the trainers (core_module.cpp holds those).
#include "bindings.h"

#include "numerics/format_spec.h"

PYBIND11_MODULE(_quantize, m) {
    namespace py = pybind11;
    m.doc() = "Precision Lab's casts: format casts with exact statistics";
    // A bad format spec reaches Python as the ValueError a caller expects.
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p)
                std::rethrow_exception(p);
        } catch (const plab::FormatError& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        }
    });
    plab::python::bindQuantize(m);
}
