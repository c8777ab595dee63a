// RowFile, writeFileAtomically, RunDirectoryLock: POSIX calls, every result checked.
#include "record/record_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/file.h>
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

} // namespace

std::string systemError(const std::string& what, const std::string& path) {
    return path + ": " + what + " (" + std::strerror(errno) + ")";
}

RowFile::RowFile(std::string path) : m_path(std::move(path)) {
    m_fd = ::open(m_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (m_fd < 0)
        throw RecordWriteError(systemError("cannot create", m_path));
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
    const std::string temp = path + ".tmp";
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
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
    m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (m_fd < 0)
        throw RecordError(systemError("cannot create the run directory's lock", path));
    if (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
        const int error = errno;
        char holder[32] = {};
        const ssize_t n = ::pread(m_fd, holder, sizeof holder - 1, 0);
        ::close(m_fd);
        m_fd = -1;
        if (error == EWOULDBLOCK)
            throw RecordError(dir + ": another run is writing to this run directory (process " +
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
