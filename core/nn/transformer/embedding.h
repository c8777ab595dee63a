// Token + position embedding, a forward/backward pair (llm.c's encoder):
//   out (B, T, C) = tok[idx[b, t]] (V, C) + pos[t] (T_max, C).
#pragma once

#include <cstdint>

namespace plab::transformer {

void embeddingForward(float* out, const std::uint8_t* idx, const float* tok, const float* pos,
                      int batch, int time, int channels);
// dtok and dpos accumulate (+=) from dout (B, T, C).
void embeddingBackward(float* dtok, float* dpos, const float* dout, const std::uint8_t* idx,
                       int batch, int time, int channels);

} // namespace plab::transformer
