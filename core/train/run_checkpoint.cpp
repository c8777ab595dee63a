// RunCheckpoint's file: magic, version, header, blobs, checksum.
#include "train/run_checkpoint.h"

#include "record/record_error.h"
#include "record/record_file.h"
#include "util/scoped_fd.h"
#include "util/system_memory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <string_view>

namespace plab {

namespace {

constexpr char kMagic[8] = {'P', 'L', 'A', 'B', 'C', 'K', 'P', 'T'};
constexpr std::uint32_t kVersion = 1;

std::uint64_t fnv1a(const char* data, std::size_t n) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::size_t i = 0; i < n; ++i) {
        h ^= static_cast<unsigned char>(data[i]);
        h *= 0x100000001b3ull;
    }
    return h;
}

template <class T>
void append(std::string& out, T value) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out.append(bytes, sizeof(T));
}

template <class T>
std::string bytesOf(const std::vector<T>& values) {
    std::string out(values.size() * sizeof(T), '\0');
    if (!values.empty())
        std::memcpy(out.data(), values.data(), out.size());
    return out;
}

template <class T>
std::vector<T> valuesOf(const std::string& bytes, const std::string& name) {
    if (bytes.size() % sizeof(T) != 0)
        throw RecordError("checkpoint part \"" + name + "\": " + std::to_string(bytes.size()) +
                          " bytes is not a whole number of values");
    std::vector<T> values(bytes.size() / sizeof(T));
    if (!values.empty())
        std::memcpy(values.data(), bytes.data(), bytes.size());
    return values;
}

// Reads the file's parts in order; every read is checked against the bytes left.
class CheckpointReader {
public:
    CheckpointReader(const std::string& path, std::string_view data) : m_path(path), m_data(data) {}
    template <class T>
    T value(const char* what) {
        T v;
        std::memcpy(&v, take(sizeof(T), what), sizeof(T));
        return v;
    }
    std::string text(std::size_t n, const char* what) { return std::string(take(n, what), n); }
    std::size_t offset() const { return m_at; }

private:
    const char* take(std::size_t n, const char* what) {
        if (n > m_data.size() - m_at)
            throw RecordError(m_path + ": is cut short (in its " + what + ")");
        const char* p = m_data.data() + m_at;
        m_at += n;
        return p;
    }
    const std::string& m_path;
    std::string_view m_data;
    std::size_t m_at = 0;
};

} // namespace

void RunCheckpoint::putFloats(const std::string& name, const std::vector<float>& values) {
    m_blobs[name] = bytesOf(values);
}
void RunCheckpoint::putDoubles(const std::string& name, const std::vector<double>& values) {
    m_blobs[name] = bytesOf(values);
}
void RunCheckpoint::putWords(const std::string& name, const std::vector<std::uint64_t>& values) {
    m_blobs[name] = bytesOf(values);
}
void RunCheckpoint::putBytes(const std::string& name, std::string bytes) {
    m_blobs[name] = std::move(bytes);
}

const std::string& RunCheckpoint::bytes(const std::string& name) const {
    const auto it = m_blobs.find(name);
    if (it == m_blobs.end())
        throw RecordError("checkpoint part \"" + name + "\" is missing");
    return it->second;
}

std::vector<float> RunCheckpoint::floats(const std::string& name, std::size_t expected) const {
    std::vector<float> values = valuesOf<float>(bytes(name), name);
    if (expected != 0 && values.size() != expected)
        throw RecordError("checkpoint part \"" + name + "\" holds " +
                          std::to_string(values.size()) + " values; this run has " +
                          std::to_string(expected));
    return values;
}
std::vector<double> RunCheckpoint::doubles(const std::string& name) const {
    return valuesOf<double>(bytes(name), name);
}
std::vector<std::uint64_t> RunCheckpoint::words(const std::string& name) const {
    return valuesOf<std::uint64_t>(bytes(name), name);
}

void putTensor(RunCheckpoint& checkpoint, const std::string& name, TensorOps& ops, Tensor t) {
    std::vector<float> host(t.size);
    if (t.size != 0)
        ops.download(host.data(), t);
    checkpoint.putFloats(name, host);
}

void restoreTensor(const RunCheckpoint& checkpoint, const std::string& name, TensorOps& ops,
                   Tensor t) {
    if (t.size == 0)
        return;
    const std::vector<float> host = checkpoint.floats(name, t.size);
    ops.upload(t, host.data());
}

void putGenerator(RunCheckpoint& checkpoint, const std::string& name,
                  const std::mt19937_64& generator) {
    std::ostringstream text;
    text << generator; // the standard's textual state: exact, and the same on every platform
    checkpoint.putBytes(name, text.str());
}

void restoreGenerator(const RunCheckpoint& checkpoint, const std::string& name,
                      std::mt19937_64& generator) {
    std::istringstream text(checkpoint.bytes(name));
    std::mt19937_64 restored;
    if (!(text >> restored))
        throw RecordError("checkpoint part \"" + name + "\" is not a generator's state");
    generator = restored;
}

void RunCheckpoint::write(const std::string& path) const {
    std::string out(kMagic, sizeof kMagic);
    append(out, kVersion);
    const std::string head = header.dump();
    append(out, static_cast<std::uint64_t>(head.size()));
    out += head;
    append(out, static_cast<std::uint64_t>(m_blobs.size()));
    for (const auto& [name, blob] : m_blobs) {
        append(out, static_cast<std::uint64_t>(name.size()));
        out += name;
        append(out, static_cast<std::uint64_t>(blob.size()));
        out += blob;
    }
    append(out, fnv1a(out.data(), out.size()));
    writeFileAtomically(path, out);
}

namespace {

// Reads exactly n bytes at offset, or throws naming the file.
void readAt(int fd, const std::string& path, char* into, std::size_t n, off_t offset) {
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = ::pread(fd, into + got, n - got, offset + static_cast<off_t>(got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            throw RecordError(systemError("cannot read", path));
        if (r == 0)
            throw RecordError(path + ": is cut short");
        got += static_cast<std::size_t>(r);
    }
}

// The file's bytes, once it is known to be what a run wrote: a regular file (not a link, FIFO
// or device, which could block the read or never end), starting with the magic, no larger than
// the memory that could hold it. A FIFO used to hang `train --resume` past its signals, a link
// to /dev/zero grew without bound, and a 2 GB file was read whole before it was refused.
std::string readCheckpointBytes(const std::string& path) {
    ScopedFd f;
    f.fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (f.fd < 0) {
        if (errno == ELOOP)
            throw RecordError(path + ": is a symbolic link; a checkpoint is a regular file its "
                                     "run wrote");
        throw RecordError(systemError("cannot be read", path));
    }
    struct stat st {};
    if (::fstat(f.fd, &st) != 0)
        throw RecordError(systemError("cannot be read", path));
    if (!S_ISREG(st.st_mode))
        throw RecordError(path + ": is " + nonRegularKind(st.st_mode) +
                          ", not a regular file; a checkpoint is a regular file its run wrote");
    const auto size = static_cast<std::uint64_t>(st.st_size);
    char magic[sizeof kMagic];
    if (size < sizeof kMagic)
        throw RecordError(path + ": is not a Precision Lab checkpoint");
    readAt(f.fd, path, magic, sizeof magic, 0);
    if (std::memcmp(magic, kMagic, sizeof kMagic) != 0)
        throw RecordError(path + ": is not a Precision Lab checkpoint");
    if (const auto available = availableMemoryBytes(); available && size > *available / 2)
        throw RecordError(path + ": is " + std::to_string(size) +
                          " bytes, more than half the memory this machine has free (" +
                          std::to_string(*available) + " bytes): not read");
    std::string data(static_cast<std::size_t>(size), '\0');
    readAt(f.fd, path, data.data(), data.size(), 0);
    return data;
}

} // namespace

RunCheckpoint RunCheckpoint::read(const std::string& path) {
    const std::string data = readCheckpointBytes(path);
    if (data.size() < sizeof kMagic + sizeof(std::uint32_t) + sizeof(std::uint64_t))
        throw RecordError(path + ": is cut short");
    std::uint64_t stored;
    std::memcpy(&stored, data.data() + data.size() - sizeof stored, sizeof stored);
    const std::string_view body(data.data(), data.size() - sizeof stored); // before the sum
    CheckpointReader r(path, body);
    (void)r.text(sizeof kMagic, "magic");
    const auto version = r.value<std::uint32_t>("version");
    if (version != kVersion)
        throw RecordError(path + ": is checkpoint format " + std::to_string(version) +
                          "; this build reads format " + std::to_string(kVersion));
    if (fnv1a(body.data(), body.size()) != stored)
        throw RecordError(path + ": its checksum does not match (the file is damaged)");
    RunCheckpoint c;
    const auto headSize = r.value<std::uint64_t>("header");
    c.header = nlohmann::json::parse(r.text(headSize, "header"), nullptr, false);
    if (!c.header.is_object())
        throw RecordError(path + ": its header is not a JSON object");
    const auto count = r.value<std::uint64_t>("part count");
    for (std::uint64_t i = 0; i < count; ++i) {
        const auto nameSize = r.value<std::uint64_t>("part names");
        std::string name = r.text(nameSize, "part names");
        const auto size = r.value<std::uint64_t>("parts");
        c.m_blobs[std::move(name)] = r.text(size, "parts");
    }
    if (r.offset() != body.size())
        throw RecordError(path + ": holds bytes after its last part");
    return c;
}

} // namespace plab
