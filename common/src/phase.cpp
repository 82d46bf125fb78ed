#include "parasim/common/phase.hpp"

#include "parasim/common/enum_names.hpp"

namespace parasim {

namespace {

constexpr std::array<std::string_view, 7> kNames{"forward",   "backward_data", "backward_weight", "update",
                                                 "recompute", "other",         "data_load"};

}  // namespace

std::string_view to_string(Phase p) { return enum_name(p, kNames); }
std::optional<Phase> parse_phase(std::string_view s) { return parse_enum_name<Phase>(s, kNames); }

}  // namespace parasim
