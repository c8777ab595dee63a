// The one exception the run record throws: a file or database of the record could not be
// created, written or read. Its message names the file and the system's reason.
#pragma once

#include <stdexcept>

namespace plab {

class RecordError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

} // namespace plab
