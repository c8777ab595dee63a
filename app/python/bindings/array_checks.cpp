// The checks every function that takes an array shares (bindings.h), compiled into both
// extensions.
#include "bindings.h"

#include <sstream>

namespace plab::python {

py::array checkedFloatArray(const py::handle& value, const std::string& name, bool writable) {
    if (!py::isinstance<py::array>(value))
        throw py::type_error(name + " is a " +
                             std::string(py::str(value.get_type().attr("__name__"))) +
                             ": expected a float32 numpy array or CPU torch tensor");
    auto array = py::reinterpret_borrow<py::array>(value);
    const py::dtype dtype = array.dtype();
    if (!dtype.is(py::dtype::of<float>())) {
        const auto kind = py::cast<std::string>(dtype.attr("name"));
        throw py::type_error(name + " has dtype " + kind +
                             ": precision_lab casts float32 values and converts nothing "
                             "silently; pass x.astype(numpy.float32) (a torch tensor: x.float())");
    }
    if (array.ndim() == 0)
        throw py::value_error(name + " is 0-d (a scalar): pass an array of at least one "
                                     "dimension, e.g. numpy.atleast_1d(x)");
    if (array.size() == 0)
        throw py::value_error(name + " is empty (shape with a 0): there is nothing to cast");
    if (!(array.flags() & py::array::c_style)) {
        std::ostringstream strides;
        for (py::ssize_t d = 0; d < array.ndim(); ++d)
            strides << (d ? ", " : "") << array.strides(d);
        throw py::value_error(name + " is not C-contiguous (strides " + strides.str() +
                              " bytes): precision_lab reads the caller's memory without a copy; "
                              "pass numpy.ascontiguousarray(x) (a torch tensor: x.contiguous())");
    }
    if (writable && !array.writeable())
        throw py::value_error(name + " is read-only: out= must be a writable array");
    return array;
}

std::span<float> floatValues(const py::array& array) {
    return {static_cast<float*>(const_cast<void*>(array.data())),
            static_cast<std::size_t>(array.size())};
}

} // namespace plab::python
