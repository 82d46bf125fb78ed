// Which JSON attributes each op kind has (internal; shared by the writer and the reader so the
// two can never disagree).
#pragma once

#include <string>
#include <vector>

#include "parasim/models/graph.hpp"

namespace parasim::models::detail {

inline std::vector<std::string> json_attr_names(OpKind kind) {
  switch (kind) {
    case OpKind::Conv2d: return {"out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias"};
    case OpKind::Linear: return {"in_features", "out_features", "bias", "shares_weights_with"};
    case OpKind::Lstm: return {"hidden", "proj", "bias", "reverse"};
    case OpKind::Embedding: return {"vocab", "embedding_dim", "shares_weights_with"};
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d: return {"kernel_size", "stride", "padding", "ceil_mode"};
    case OpKind::AdaptiveAvgPool2d: return {"output_size"};
    case OpKind::Concat: return {"axis"};
    case OpKind::Dropout: return {"p"};
    case OpKind::SampledSoftmax: return {"vocab", "num_sampled"};
    case OpKind::Attention: return {"heads", "kv_heads", "additive", "causal", "p"};
    case OpKind::Rotary: return {"heads", "kv_heads"};
    case OpKind::Experts: return {"experts", "top_k", "expert_width", "gated", "capacity_factor"};
    case OpKind::LayerNorm: return {"bias"};
    case OpKind::Add: return {"residual"};
    case OpKind::CrossEntropy: return {"fused"};
    case OpKind::Gather: return {"positions"};
    default: return {};
  }
}

}  // namespace parasim::models::detail
