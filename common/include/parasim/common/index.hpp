// Ids are signed (TaskId, DeviceId, OpId: -1 means "none"), containers are indexed by size_t.
// ix() is the one conversion, for ids already known to be valid.
//
// Example:
//   const TaskTiming& tt = timeline[ix(t)];
#pragma once

#include <cstddef>
#include <cstdint>

namespace parasim {

constexpr std::size_t ix(std::int64_t i) { return static_cast<std::size_t>(i); }

}  // namespace parasim
