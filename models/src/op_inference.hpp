// Shape inference, attribute validation and cost computation for one op.
//
// The builder and the JSON loader both go through infer_op, so a model described in JSON gets
// exactly the checks and numbers a zoo model gets: nothing stored in a file is trusted.
#pragma once

#include <string>
#include <vector>

#include "parasim/models/graph.hpp"

namespace parasim::models::detail {

/// Completes `op` from its kind, attrs and producers: fills input_shapes, validates attrs,
/// infers output_shape (Input and Reshape take the shape already in op.output_shape; Reshape
/// resolves one -1), then computes the costs. `weight_owner` is the op named by
/// attrs.shares_weights_with, or nullptr. Throws InputError
///   conv2d "conv1" with input [1, 3, 4, 4]: expected ...
void infer_op(Op& op, const std::vector<const Op*>& producers, const Op* weight_owner);

/// `kind "name" with input(s) [..], [..]` — the prefix of every error about `op`.
std::string describe_op(const Op& op);

// Internal steps of infer_op (op_inference.cpp and op_costs.cpp).
void infer_shape(Op& op, const Op* weight_owner);
void compute_costs(Op& op, const std::vector<const Op*>& producers);

/// Token slots an experts op computes (op_costs.cpp has the rule).
std::int64_t routed_slots(const Op& op);

}  // namespace parasim::models::detail
