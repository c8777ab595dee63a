// Next-byte cross-entropy over a sequence, a forward/backward pair in one pass:
//   loss = mean over the N = B * T positions of -log softmax(logits[n])[target[n]];
//   dlogits (N, V) = (softmax(logits) - onehot(target)) / N.
// In float with a polynomial e^x (gelu_tanh.h's), so that the V-wide rows vectorise; the sum of
// the row losses in double.
#pragma once

#include <cstdint>

namespace plab::transformer {

double sequenceCrossEntropy(const float* logits, const std::uint8_t* targets, int rows, int vocab,
                            float* dlogits);

} // namespace plab::transformer
