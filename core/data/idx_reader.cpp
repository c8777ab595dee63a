// readIdx(): gzopen reads plain and gzip files alike.
#include "data/idx_reader.h"

#include "data/dataset.h"

#include <zlib.h>

#include <cstdio>
#include <memory>

namespace plab {
namespace {

struct GzCloser {
    void operator()(gzFile f) const { gzclose(f); }
};
using GzPtr = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

[[noreturn]] void fail(const std::string& path, const std::string& why) {
    throw DataError(path + ": " + why);
}

void readExactly(gzFile f, void* buf, std::size_t n, const std::string& path, const char* what) {
    auto* p = static_cast<unsigned char*>(buf);
    while (n > 0) {
        const unsigned chunk = n > (1u << 30) ? (1u << 30) : static_cast<unsigned>(n);
        const int got = gzread(f, p, chunk);
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
    GzPtr f(gzopen(path.c_str(), "rb"));
    if (!f)
        fail(path, "cannot open");
    unsigned char magic[4];
    readExactly(f.get(), magic, 4, path, "header");
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
        readExactly(f.get(), b, 4, path, "header");
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
    out.data.resize(total);
    readExactly(f.get(), out.data.data(), total, path, "data");
    unsigned char extra;
    if (gzread(f.get(), &extra, 1) > 0)
        fail(path, "longer than its header says (" + std::to_string(total) + " data bytes)");
    return out;
}

} // namespace plab
