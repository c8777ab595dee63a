// The pieces of the precision_lab._quantize and _core extensions, one file per area, and the
// checks every function that takes an array shares.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <span>
#include <string>

namespace plab::python {

namespace py = pybind11;

void bindQuantize(py::module_& m);
void bindRunRecord(py::module_& m);
void bindWatch(py::module_& m);
void bindEmulate(py::module_& m);
void bindAdvise(py::module_& m);

// A float32, C-contiguous, non-empty array of at least one dimension, or TypeError / ValueError
// naming `name`, what it is and what to do. Never converts: a silent copy to float32 would hide
// what the user's tensor is. writable: also refuses a read-only array (for out=).
py::array checkedFloatArray(const py::handle& value, const std::string& name, bool writable);
// The values of an array checkedFloatArray accepted.
std::span<float> floatValues(const py::array& array);

} // namespace plab::python
