// RowFile, writeFileAtomically, RunDirectoryLock: POSIX calls, every result checked.
#include "record/record_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace plab {
namespace {

// Writes all of data or returns false with errno set (a short write of a full disk included).
bool writeAll(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        if (n == 0) {
            errno = ENOSPC;
            return false;
        }
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

std::string notRegularMessage(const std::string& path, unsigned mode, const char* doing) {
    return path + ": is " + nonRegularKind(mode) + ", not a regular file; refusing to " + doing +
           " it (a run writes only regular files of its own)";
}

// A temporary of the writer's own beside path: created anew (O_EXCL), never through a link. A
// leftover of a writer that died (a regular file or a link by that name) is removed first; the
// name is the writer's by convention, and removing a link removes only the link.
int createTemporary(const std::string& temp) {
    for (int attempt = 0; attempt < 2; ++attempt) {
        const int fd =
            ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            return fd;
        struct stat st {};
        if (::lstat(temp.c_str(), &st) != 0)
            continue;
        if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
            throw RecordError(notRegularMessage(temp, st.st_mode, "write"));
        ::unlink(temp.c_str());
    }
    return -1;
}

} // namespace

std::string nonRegularKind(unsigned mode) {
    if (S_ISREG(mode))
        return {};
    if (S_ISLNK(mode))
        return "a symbolic link";
    if (S_ISDIR(mode))
        return "a folder";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

void refuseNonRegularTarget(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno == ENOENT)
            return;
        throw RecordWriteError(systemError("cannot look at", path));
    }
    if (!S_ISREG(st.st_mode))
        throw RecordError(notRegularMessage(path, st.st_mode, "replace"));
}

int openRegularFileForWriting(const std::string& path, WriteOpen how, bool readToo) {
    // Refused before open where it can be: opening a FIFO to write waits for a reader. O_NONBLOCK
    // closes the race with a FIFO put there after the look; O_NOFOLLOW the one with a link.
    refuseNonRegularTarget(path);
    int flags = (readToo ? O_RDWR : O_WRONLY) | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    if (how == WriteOpen::Append)
        flags |= O_APPEND;
    const int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) {
        if (errno == ELOOP || errno == ENXIO) // a link or a FIFO that appeared after the look
            throw RecordError(path + ": is not a regular file; refusing to write it");
        throw RecordWriteError(systemError("cannot create", path));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const unsigned mode = st.st_mode;
        ::close(fd);
        throw RecordError(notRegularMessage(path, mode, "write"));
    }
    // Emptied only once it is known to be a regular file; blocking again, as writers expect.
    if ((how == WriteOpen::Truncate && ::ftruncate(fd, 0) != 0) ||
        ::fcntl(fd, F_SETFL, flags & O_APPEND) != 0) {
        const int error = errno;
        ::close(fd);
        errno = error;
        throw RecordWriteError(systemError("cannot write", path));
    }
    return fd;
}

std::string systemError(const std::string& what, const std::string& path) {
    return path + ": " + what + " (" + std::strerror(errno) + ")";
}

RowFile::RowFile(std::string path, WriteOpen how) : m_path(std::move(path)) {
    m_fd = openRegularFileForWriting(m_path, how);
    struct stat st {};
    if (how != WriteOpen::Truncate && ::fstat(m_fd, &st) == 0)
        m_size = static_cast<std::uint64_t>(st.st_size); // a failed append is cut back to here
}

RowFile::~RowFile() {
    close();
}

RowFile::RowFile(RowFile&& other) noexcept
    : m_path(std::move(other.m_path)), m_fd(other.m_fd), m_size(other.m_size) {
    other.m_fd = -1;
}

RowFile& RowFile::operator=(RowFile&& other) noexcept {
    if (this != &other) {
        close();
        m_path = std::move(other.m_path);
        m_fd = other.m_fd;
        m_size = other.m_size;
        other.m_fd = -1;
    }
    return *this;
}

void RowFile::close() noexcept {
    if (m_fd >= 0)
        ::close(m_fd);
    m_fd = -1;
}

void RowFile::append(const std::string& rows) {
    if (rows.empty())
        return;
    if (m_fd < 0)
        throw RecordError(m_path + ": not open for writing");
    if (!writeAll(m_fd, rows.data(), rows.size())) {
        const int error = errno;
        // Cut back to the last whole row, so that the file stays a valid table.
        if (::ftruncate(m_fd, static_cast<off_t>(m_size)) == 0)
            ::lseek(m_fd, static_cast<off_t>(m_size), SEEK_SET);
        errno = error;
        throw RecordWriteError(systemError("cannot write", m_path));
    }
    m_size += rows.size();
}

void writeFileAtomically(const std::string& path, const std::string& contents) {
    refuseNonRegularTarget(path);
    const std::string temp = path + ".tmp";
    const int fd = createTemporary(temp);
    if (fd < 0)
        throw RecordWriteError(systemError("cannot create", temp));
    bool ok = writeAll(fd, contents.data(), contents.size()) && ::fsync(fd) == 0;
    int error = ok ? 0 : errno;
    if (::close(fd) != 0 && ok) { // some file systems report a full disk only here
        ok = false;
        error = errno;
    }
    if (!ok) {
        ::unlink(temp.c_str());
        errno = error;
        throw RecordWriteError(systemError("cannot write", path));
    }
    // Looked at again just before the rename: what stood there while the file was written.
    try {
        refuseNonRegularTarget(path);
    } catch (...) {
        ::unlink(temp.c_str());
        throw;
    }
    if (::rename(temp.c_str(), path.c_str()) != 0) {
        const int renameError = errno;
        ::unlink(temp.c_str());
        errno = renameError;
        throw RecordWriteError(systemError("cannot replace", path));
    }
}

bool runDirectoryLocked(const std::string& dir) {
    const std::string path = dir + "/.lock";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    // A shared lock is refused while a writer holds its exclusive one.
    const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);
    return held;
}

RunDirectoryLock::RunDirectoryLock(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        throw RecordError(dir + ": cannot create the run directory (" + ec.message() + ")");
    const std::string path = dir + "/.lock";
    m_fd = openRegularFileForWriting(path, WriteOpen::Keep, /*readToo=*/true);
    if (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
        const int error = errno;
        char holder[32] = {};
        const ssize_t n = ::pread(m_fd, holder, sizeof holder - 1, 0);
        ::close(m_fd);
        m_fd = -1;
        if (error == EWOULDBLOCK)
            throw RecordError(dir + ": " + kRunDirectoryLockedMessage + " (process " +
                              std::string(holder, n > 0 ? static_cast<std::size_t>(n) : 0) +
                              "); choose another --out or wait for it to end");
        errno = error;
        throw RecordError(systemError("cannot lock the run directory", path));
    }
    const std::string pid = std::to_string(::getpid());
    if (::ftruncate(m_fd, 0) != 0 || ::pwrite(m_fd, pid.data(), pid.size(), 0) < 0) {
        const int error = errno;
        ::close(m_fd);
        m_fd = -1;
        errno = error;
        throw RecordError(systemError("cannot write the run directory's lock", path));
    }
}

RunDirectoryLock::~RunDirectoryLock() {
    if (m_fd >= 0)
        ::close(m_fd); // releases the lock; the file stays (removing it would race a new run)
}

} // namespace plab
