// The run record's files at the system-call level, so that what reaches the disk is only ever
// what was meant: whole rows, files replaced only by complete new ones, one writer per folder.
//  - RowFile: an append-only file written a block of whole rows at a time, each block in one
//    write loop; a failed or short write (full disk) is undone (the file is cut back to its last
//    whole row) and reported, never left as half a row.
//  - writeFileAtomically: a temporary file written, synced, then renamed over the target; on any
//    failure the temporary is removed and the target keeps its previous contents.
//  - RunDirectoryLock: an exclusive advisory lock (flock) on DIR/.lock for as long as a run
//    writes there; a second writer is refused with the holder's process id.
// Every failure throws RecordError naming the file and the system's reason.
#pragma once

#include "record/record_error.h"

#include <cstdint>
#include <string>
#include <system_error>

namespace plab {

class RowFile {
public:
    RowFile() = default;
    // Creates or truncates path.
    explicit RowFile(std::string path);
    ~RowFile();
    RowFile(RowFile&& other) noexcept;
    RowFile& operator=(RowFile&& other) noexcept;
    RowFile(const RowFile&) = delete;
    RowFile& operator=(const RowFile&) = delete;

    // rows: whole lines, each ending in '\n'. All of them reach the file, or none does.
    void append(const std::string& rows);
    const std::string& path() const { return m_path; }
    std::uint64_t size() const { return m_size; }

private:
    void close() noexcept;
    std::string m_path;
    int m_fd = -1;
    std::uint64_t m_size = 0;
};

// Replaces path with contents, or leaves it as it was and throws.
void writeFileAtomically(const std::string& path, const std::string& contents);

class RunDirectoryLock {
public:
    // Creates dir (and parents) if needed and takes its lock, or throws RecordError saying who
    // holds it.
    explicit RunDirectoryLock(const std::string& dir);
    ~RunDirectoryLock();
    RunDirectoryLock(const RunDirectoryLock&) = delete;
    RunDirectoryLock& operator=(const RunDirectoryLock&) = delete;

private:
    int m_fd = -1;
};

// Whether a run holds dir's lock now (another process writes there), without creating or
// writing anything: a reader's probe, which works on read-only storage too (false there when no
// lock is held, as for a folder without a lock file).
bool runDirectoryLocked(const std::string& dir);

// A filesystem query's error that means "cannot look" (no permission, an I/O error), as opposed
// to "nothing there" (no such file, a file where a folder was expected): the first is named
// with its reason, the second is an ordinary answer.
inline bool unreadable(const std::error_code& ec) {
    return ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory;
}

// "what failed: path: the system's reason" for the current errno.
std::string systemError(const std::string& what, const std::string& path);

} // namespace plab
