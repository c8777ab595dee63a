// Writes the golden tables (golden_table.h) from NVIDIA's host conversions: run once where CUDA's
// headers are installed, when the dense inputs or the list of conversions change, and commit
// tests/numerics/golden/. Usage: generate_nvidia_golden <folder>
#include "dense_inputs.h"
#include "golden_table.h"
#include "nvidia_reference.h"

#include <cmath>
#include <cstdio>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <folder for the tables>\n", argv[0]);
        return 2;
    }
    const std::vector<float> inputs = plab::test::denseInputs();
    for (const plab::test::NvidiaConversion& c : plab::test::nvidiaConversions()) {
        std::vector<std::uint32_t> codes;
        codes.reserve(inputs.size());
        for (float x : inputs)
            codes.push_back(c.convert(x));
        const int bytes = plab::test::bytesPerCode(c.config.format.totalBits());
        const QString path = plab::test::goldenTablePath(QString::fromLocal8Bit(argv[1]), c.name);
        if (!plab::test::writeGoldenTable(
                path, plab::test::goldenPayload(c.name, inputs, codes, bytes))) {
            std::fprintf(stderr, "%s: cannot be written\n", qPrintable(path));
            return 1;
        }
        std::printf("%s: %zu codes\n", qPrintable(path), codes.size());
    }
    return 0;
}
