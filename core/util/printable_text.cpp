// printableText: a UTF-8 decoder that keeps valid, non-control sequences and escapes the rest.
#include "util/printable_text.h"

#include <cstdint>
#include <cstdio>

namespace plab {
namespace {

void appendEscaped(std::string& out, const char* form, unsigned value) {
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, form, value);
    out += buffer;
}

// The length of the valid UTF-8 sequence at text[i], or 0 when its first byte does not start
// one (overlong forms, surrogates and values past U+10FFFF are invalid, as RFC 3629 says).
std::size_t sequenceLength(std::string_view text, std::size_t i, std::uint32_t& codePoint) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char first = byte(i);
    std::size_t length = 0;
    std::uint32_t minimum = 0;
    if (first >= 0xC2 && first <= 0xDF) {
        length = 2, codePoint = first & 0x1Fu, minimum = 0x80;
    } else if (first >= 0xE0 && first <= 0xEF) {
        length = 3, codePoint = first & 0x0Fu, minimum = 0x800;
    } else if (first >= 0xF0 && first <= 0xF4) {
        length = 4, codePoint = first & 0x07u, minimum = 0x10000;
    } else {
        return 0;
    }
    if (i + length > text.size())
        return 0;
    for (std::size_t k = 1; k < length; ++k) {
        if ((byte(i + k) & 0xC0u) != 0x80u)
            return 0;
        codePoint = (codePoint << 6) | (byte(i + k) & 0x3Fu);
    }
    if (codePoint < minimum || codePoint > 0x10FFFF || (codePoint >= 0xD800 && codePoint <= 0xDFFF))
        return 0;
    return length;
}

} // namespace

std::string printableText(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7F)
                appendEscaped(out, "\\x%02x", c);
            else
                out += static_cast<char>(c);
            ++i;
            continue;
        }
        std::uint32_t codePoint = 0;
        const std::size_t length = sequenceLength(text, i, codePoint);
        if (length == 0) {
            appendEscaped(out, "\\x%02x", c);
            ++i;
        } else if (codePoint <= 0x9F) { // a C1 control
            appendEscaped(out, "\\u%04x", codePoint);
            i += length;
        } else {
            out.append(text.substr(i, length));
            i += length;
        }
    }
    return out;
}

} // namespace plab
