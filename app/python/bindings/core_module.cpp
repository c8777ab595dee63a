// precision_lab._core: run records, the PyTorch watcher's recorder, emulated runs and the
// advisor. The casts live in precision_lab._quantize (quantize_module.cpp), which loads without
// this one: a script that only casts never loads SQLite or the trainers.
#include "bindings.h"

#include "record/record_error.h"

PYBIND11_MODULE(_core, m) {
    namespace py = pybind11;
    m.doc() = "Precision Lab's core: run records, the PyTorch watcher's recorder, emulated runs, "
              "the advisor";
    // The core's one-line errors reach Python as the exceptions a caller expects: a record's as
    // OSError; a bad format or config (std::invalid_argument) as pybind11's ValueError.
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p)
                std::rethrow_exception(p);
        } catch (const plab::RecordError& e) {
            PyErr_SetString(PyExc_OSError, e.what());
        }
    });
    plab::python::bindRunRecord(m);
    plab::python::bindWatch(m);
    plab::python::bindEmulate(m);
    plab::python::bindAdvise(m);
}
