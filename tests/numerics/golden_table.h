// A golden table: NVIDIA's code for every dense input (dense_inputs.h) under one conversion,
// kept in tests/numerics/golden/<name>.codes.z so that every machine checks against NVIDIA, with
// or without CUDA's headers. The file is qCompress'd (zlib, with its checksum) text header plus
// codes: "plab-nvidia-golden 1 <name> <inputs> <bytes per code> <inputs hash>\n", then the codes'
// low bytes, then (16-bit formats) their high bytes: byte planes compress 4x better than pairs.
#pragma once

#include <QByteArray>
#include <QFile>
#include <QString>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

namespace plab::test {

// FNV-1a over the inputs' bits: a table made from other inputs is refused, not misread.
inline std::uint64_t inputsHash(const std::vector<float>& inputs) {
    std::uint64_t h = 1469598103934665603ull;
    for (float x : inputs) {
        h ^= std::bit_cast<std::uint32_t>(x);
        h *= 1099511628211ull;
    }
    return h;
}

inline QString goldenTablePath(const QString& folder, const std::string& name) {
    return folder + QLatin1Char('/') + QString::fromStdString(name) + QStringLiteral(".codes.z");
}

inline QByteArray goldenHeader(const std::string& name, std::size_t inputs, int bytesPerCode,
                               std::uint64_t hash) {
    return QStringLiteral("plab-nvidia-golden 1 %1 %2 %3 %4\n")
        .arg(QString::fromStdString(name))
        .arg(inputs)
        .arg(bytesPerCode)
        .arg(hash, 16, 16, QLatin1Char('0'))
        .toLatin1();
}

inline int bytesPerCode(int formatBits) {
    return formatBits > 8 ? 2 : 1;
}

// Codes -> the file's bytes (before compression).
inline QByteArray goldenPayload(const std::string& name, const std::vector<float>& inputs,
                                const std::vector<std::uint32_t>& codes, int bytes) {
    QByteArray data = goldenHeader(name, inputs.size(), bytes, inputsHash(inputs));
    for (int plane = 0; plane < bytes; ++plane)
        for (std::uint32_t code : codes)
            data.append(static_cast<char>((code >> (8 * plane)) & 0xFF));
    return data;
}

inline bool writeGoldenTable(const QString& path, const QByteArray& payload) {
    QFile file(path);
    const QByteArray compressed = qCompress(payload, 9);
    return file.open(QIODevice::WriteOnly) && file.write(compressed) == compressed.size() &&
           file.flush();
}

// The table's codes, or the reason it cannot be used (missing, corrupt, made for other inputs).
struct GoldenTable {
    std::vector<std::uint32_t> codes;
    QString error;
};

inline GoldenTable codesFromPayload(const QByteArray& payload, const std::string& name,
                                    const std::vector<float>& inputs, int bytes) {
    const QByteArray header = goldenHeader(name, inputs.size(), bytes, inputsHash(inputs));
    if (!payload.startsWith(header))
        return {{},
                QStringLiteral("header is '%1', expected '%2' (regenerate: docs/testing.md)")
                    .arg(QString::fromLatin1(payload.left(payload.indexOf('\n'))),
                         QString::fromLatin1(header.trimmed()))};
    const qsizetype expected = header.size() + static_cast<qsizetype>(inputs.size()) * bytes;
    if (payload.size() != expected)
        return {{}, QStringLiteral("%1 bytes, expected %2").arg(payload.size()).arg(expected)};
    GoldenTable table;
    table.codes.assign(inputs.size(), 0);
    const auto* body = reinterpret_cast<const unsigned char*>(payload.constData() + header.size());
    for (int plane = 0; plane < bytes; ++plane)
        for (std::size_t i = 0; i < inputs.size(); ++i)
            table.codes[i] |= std::uint32_t{body[plane * inputs.size() + i]} << (8 * plane);
    return table;
}

inline GoldenTable readGoldenTable(const QString& path, const std::string& name,
                                   const std::vector<float>& inputs, int bytes) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {{}, path + QStringLiteral(": missing (") + file.errorString() + QLatin1Char(')')};
    const QByteArray payload = qUncompress(file.readAll());
    if (payload.isEmpty())
        return {{}, path + QStringLiteral(": not a zlib stream, or its checksum fails")};
    GoldenTable table = codesFromPayload(payload, name, inputs, bytes);
    if (!table.error.isEmpty())
        table.error = path + QStringLiteral(": ") + table.error;
    return table;
}

} // namespace plab::test
