// The exceptions the run record throws: a file or database of the record could not be created,
// written or read. Each message names the file and the system's reason.
#pragma once

#include <stdexcept>

namespace plab {

class RecordError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The storage refused a write (a full disk, a file-size limit, an I/O error, a folder removed or
// not writable): what was asked was fine, the disk was not. Commands answer it with their
// "record could not be written" status (the CLI's exit 4), not as bad input.
class RecordWriteError : public RecordError {
public:
    using RecordError::RecordError;
};

} // namespace plab
