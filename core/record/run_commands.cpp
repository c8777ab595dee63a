// Run commands: the commands file's writer (locked append) and reader (polled by size).
#include "record/run_commands.h"

#include "record/record_error.h"
#include "record/record_file.h"
#include "record/run_record.h"
#include "util/scoped_fd.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace plab {
namespace {

std::int64_t countLines(int fd, const std::string& path) {
    std::int64_t lines = 0;
    char buffer[1 << 16];
    if (::lseek(fd, 0, SEEK_SET) < 0)
        throw RecordError(systemError("cannot read", path));
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            throw RecordError(systemError("cannot read", path));
        if (n == 0)
            return lines;
        for (ssize_t i = 0; i < n; ++i)
            lines += buffer[i] == '\n';
    }
}

} // namespace

std::string whyNotSteerable(const std::string& dir) {
    return whyNotSteerable(RunRecord(dir));
}

std::string whyNotSteerable(const RunRecord& record) {
    const std::string& dir = record.dir();
    const nlohmann::json source = record.meta("source");
    if (source == "pytorch-watch")
        return dir + " is a watched run: precision_lab.torch.watch only observes its script's "
                     "training (run the script under precision_lab.torch.emulate to steer it)";
    if (source != "pytorch-emulate")
        return dir + " is a run of precision-lab's own trainer: only an emulated PyTorch run "
                     "(precision_lab.torch.emulate) takes commands through its record";
    if (!record.isBeingWritten())
        return dir + " has ended: no script writes it any more, so no one would read a command";
    if (::access(dir.c_str(), W_OK) != 0)
        return dir + " cannot be written here (a read-only folder or copy): commands go into "
                     "the run's folder";
    return {};
}

std::int64_t sendRunCommand(const std::string& dir, const nlohmann::json& command) {
    if (const std::string why = whyNotSteerable(dir); !why.empty())
        throw RecordError(why);
    const std::string path = dir + "/" + kCommandsFile;
    std::string line = command.dump() + "\n";
    if (line.size() > kMaxCommandBytes)
        throw RecordError(path + ": a command of " + std::to_string(line.size()) +
                          " bytes (at most " + std::to_string(kMaxCommandBytes) + ")");
    ScopedFd f;
    // Never through a planted link, never a FIFO or device (a link to /dev/zero held the lock
    // forever while the lines were counted).
    f.fd = openRegularFileForWriting(path, WriteOpen::Append, /*readToo=*/true);
    // Serialises senders: the line count read under the lock is this command's number.
    while (::flock(f.fd, LOCK_EX) != 0)
        if (errno != EINTR)
            throw RecordError(systemError("cannot lock", path));
    const std::int64_t number = countLines(f.fd, path) + 1;
    std::size_t written = 0;
    while (written < line.size()) { // O_APPEND: every part lands at the end, under the lock
        const ssize_t n = ::write(f.fd, line.data() + written, line.size() - written);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            throw RecordError(systemError("cannot write a command to", path));
        written += static_cast<std::size_t>(n);
    }
    return number;
}

CommandInbox::CommandInbox(std::string dir) : m_path(std::move(dir) + "/" + kCommandsFile) {}

std::vector<RunCommand> CommandInbox::poll() {
    std::vector<RunCommand> out;
    struct stat st {};
    if (::lstat(m_path.c_str(), &st) != 0 || static_cast<std::uint64_t>(st.st_size) <= m_offset)
        return out; // no file, or nothing new: the common case, one stat
    const auto unreadable = [&](const std::string& why) {
        if (!m_reportedUnreadable)
            out.push_back({m_lines + 1, nullptr, why});
        m_reportedUnreadable = true;
        return out;
    };
    ScopedFd f;
    if (!S_ISREG(st.st_mode)) // a planted link, FIFO or device is not the script's inbox
        return unreadable(m_path + ": is " + nonRegularKind(st.st_mode) +
                          ", not a regular file; no command is read from it");
    f.fd = ::open(m_path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (f.fd < 0)
        return unreadable(systemError("cannot read", m_path));
    std::string text(static_cast<std::size_t>(st.st_size) - m_offset, '\0');
    std::size_t got = 0;
    while (got < text.size()) {
        const ssize_t n =
            ::pread(f.fd, text.data() + got, text.size() - got, static_cast<off_t>(m_offset + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return unreadable(systemError("cannot read", m_path));
        if (n == 0)
            break;
        got += static_cast<std::size_t>(n);
    }
    text.resize(got);
    std::size_t start = 0;
    for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
        RunCommand c;
        c.number = ++m_lines;
        const std::string_view line(text.data() + start, end - start);
        try {
            c.body = nlohmann::json::parse(line);
            if (!c.body.is_object())
                c.error = "not a JSON object";
        } catch (const nlohmann::json::exception&) {
            c.body = nullptr;
            c.error = "not JSON";
        }
        out.push_back(std::move(c));
    }
    if (start == 0 && text.size() > kMaxCommandBytes) { // a line that never ends: skip it
        out.push_back({++m_lines, nullptr,
                       "a line of more than " + std::to_string(kMaxCommandBytes) + " bytes"});
        start = text.size();
    }
    m_offset += start;
    return out;
}

} // namespace plab
