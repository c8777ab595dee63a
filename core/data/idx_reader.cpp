// readIdx(): gzopen reads plain and gzip files alike; a build without zlib (machines with only a
// compiler) reads plain files and names gzip ones.
#include "data/idx_reader.h"

#include "data/dataset.h"
#include "util/huge_pages.h"

#if PLAB_HAVE_ZLIB
#include <zlib.h>
#endif

#include <cstdio>
#include <memory>

namespace plab {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
    throw DataError(path + ": " + why);
}

#if PLAB_HAVE_ZLIB
struct FileCloser {
    void operator()(gzFile f) const { gzclose(f); }
};
using FilePtr = std::unique_ptr<std::remove_pointer_t<gzFile>, FileCloser>;
FilePtr openFile(const std::string& path) {
    return FilePtr(gzopen(path.c_str(), "rb"));
}
// Bytes read (0 at the end), or -1 for a read or decompression error.
long readSome(const FilePtr& f, void* buf, unsigned n) {
    return gzread(f.get(), buf, n);
}
#else
struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;
FilePtr openFile(const std::string& path) {
    return FilePtr(std::fopen(path.c_str(), "rb"));
}
long readSome(const FilePtr& f, void* buf, unsigned n) {
    const std::size_t got = std::fread(buf, 1, n, f.get());
    return got == 0 && std::ferror(f.get()) ? -1 : static_cast<long>(got);
}
#endif

void readExactly(const FilePtr& f, void* buf, std::size_t n, const std::string& path,
                 const char* what) {
    auto* p = static_cast<unsigned char*>(buf);
    while (n > 0) {
        const unsigned chunk = n > (1u << 30) ? (1u << 30) : static_cast<unsigned>(n);
        const long got = readSome(f, p, chunk);
        if (got < 0)
            fail(path, std::string("corrupt or unreadable (") + what + ")");
        if (got == 0)
            fail(path, std::string("truncated: ended inside the ") + what);
        p += got;
        n -= static_cast<std::size_t>(got);
    }
}

} // namespace

IdxArray readIdx(const std::string& path, std::uint64_t maxBytes) {
    FilePtr f = openFile(path);
    if (!f)
        fail(path, "cannot open");
    unsigned char magic[4];
    readExactly(f, magic, 4, path, "header");
#if !PLAB_HAVE_ZLIB
    if (magic[0] == 0x1f && magic[1] == 0x8b)
        fail(path, "gzip-compressed, and this build has no zlib; gunzip it first");
#endif
    if (magic[0] != 0 || magic[1] != 0)
        fail(path, "not an IDX file (magic must start with two zero bytes)");
    if (magic[2] != 0x08) {
        char code[8];
        std::snprintf(code, sizeof code, "0x%02x", magic[2]);
        fail(path, std::string("unsupported IDX element type ") + code +
                       " (expected 0x08, unsigned bytes)");
    }
    const int rank = magic[3];
    if (rank < 1 || rank > 4)
        fail(path, "IDX rank " + std::to_string(rank) + " (expected 1..4)");
    IdxArray out;
    std::uint64_t total = 1;
    for (int d = 0; d < rank; ++d) {
        unsigned char b[4];
        readExactly(f, b, 4, path, "header");
        const std::uint32_t dim = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) |
                                  (std::uint32_t{b[2]} << 8) | b[3];
        if (dim == 0)
            fail(path, "dimension " + std::to_string(d) + " is 0");
        total *= dim;
        if (total > maxBytes)
            fail(path, "header claims more than " + std::to_string(maxBytes) +
                           " bytes of data; refusing");
        out.dims.push_back(dim);
    }
    out.data.reserve(total);
    adviseHugePages(out.data.data(), total);
    out.data.resize(total);
    readExactly(f, out.data.data(), total, path, "data");
    // Reading past the data is also where zlib checks the stream's CRC and length: -1 there is
    // a corrupt file, not the end of one.
    unsigned char extra;
    const long tail = readSome(f, &extra, 1);
    if (tail < 0)
        fail(path, "corrupt or unreadable (gzip checksum or data error after the data)");
    if (tail > 0)
        fail(path, "longer than its header says (" + std::to_string(total) + " data bytes)");
    return out;
}

} // namespace plab
