#include "parasim/common/collective_op.hpp"

#include "parasim/common/enum_names.hpp"

namespace parasim {

namespace {

constexpr std::array<std::string_view, 5> kNames{"allreduce", "reduce_scatter", "all_gather", "broadcast",
                                                 "all_to_all"};

}  // namespace

std::string_view to_string(CollectiveOp op) { return enum_name(op, kNames); }
std::optional<CollectiveOp> parse_collective_op(std::string_view s) { return parse_enum_name<CollectiveOp>(s, kNames); }

}  // namespace parasim
