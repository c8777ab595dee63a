// The run record's files at the system-call level, so that what reaches the disk is only ever
// what was meant: whole rows, files replaced only by complete new ones, one writer per folder.
//  - RowFile: an append-only file written a block of whole rows at a time, each block in one
//    write loop; a failed or short write (full disk) is undone (the file is cut back to its last
//    whole row) and reported, never left as half a row.
//  - writeFileAtomically: a temporary file written, synced, then renamed over the target; on any
//    failure the temporary is removed and the target keeps its previous contents. Only a regular
//    file (or nothing) is ever replaced: a symbolic link, device, FIFO or folder at the target is
//    refused, so that `--out /dev/full` cannot replace a device node, nor a planted link redirect
//    a write.
//  - openRegularFileForWriting: every file a run opens to write goes through it: never through a
//    symbolic link (O_NOFOLLOW), never a FIFO or device (refused without blocking on them).
//  - RunDirectoryLock: an exclusive advisory lock (flock) on DIR/.lock for as long as a run
//    writes there; a second writer is refused with the holder's process id.
// Every failure throws RecordError naming the file and the system's reason.
#pragma once

#include "record/record_error.h"

#include <cstdint>
#include <string>
#include <system_error>

namespace plab {

// How a file is opened for writing: created if missing, and then emptied, appended to, or kept.
enum class WriteOpen { Truncate, Append, Keep };

class RowFile {
public:
    RowFile() = default;
    // Creates path, or empties it (Truncate) or goes on at its end (Append).
    explicit RowFile(std::string path, WriteOpen how = WriteOpen::Truncate);
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

// Replaces path with contents, or leaves it as it was and throws. Throws RecordError when path
// is there and is not a regular file.
void writeFileAtomically(const std::string& path, const std::string& contents);

// A descriptor (O_CLOEXEC) for path as a regular file, created 0644 if missing; or throws
// RecordError naming the file and what it is (a symbolic link, a FIFO, a device, a folder). With
// readToo the descriptor also reads (O_RDWR).
int openRegularFileForWriting(const std::string& path, WriteOpen how, bool readToo = false);
// Throws RecordError unless path is absent or a regular file (not followed through a link): what
// a writer checks before it renames a file of its own over path.
void refuseNonRegularTarget(const std::string& path);
// What a file that is not a regular one is, as messages name it ("a symbolic link", "a FIFO",
// "a character device", ...), from lstat's mode; empty for a regular file.
std::string nonRegularKind(unsigned mode);

// What a RunDirectoryLock's refusal says when another process holds the folder (a sweep tells a
// child refused for it from a failed one by it).
inline constexpr const char* kRunDirectoryLockedMessage =
    "another run is writing to this run directory";

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
