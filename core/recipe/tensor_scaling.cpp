// TensorScaling's block scheme: each block policy's block, scale kind and defaults.
#include "recipe/tensor_scaling.h"

namespace plab {

std::optional<BlockScheme> TensorScaling::blockScheme() const {
    if (!isBlockScaling(policy))
        return std::nullopt;
    BlockScheme s;
    s.kind = policy == ScalingPolicy::Nvfp4       ? BlockScaleKind::Nvfp4
             : policy == ScalingPolicy::Blockwise ? BlockScaleKind::Fp32
                                                  : BlockScaleKind::Mx;
    s.blockSize = blockSize > 0                        ? blockSize
                  : policy == ScalingPolicy::Nvfp4     ? 16
                  : policy == ScalingPolicy::Blockwise ? 128
                                                       : 32;
    s.scaleRounding = scaleRounding;
    s.powerOfTwoScales = pow2Scales;
    s.fourOverSix = fourOverSix;
    return s;
}

} // namespace plab
