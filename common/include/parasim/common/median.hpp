// Medians of repeated measurements, in one place. Two conventions for an even count, both on
// purpose: the profile format's median_ns is the mean of the two middle values (rounded half
// up); the executor reports the lower middle value, so that its median is a run that happened.
//
// Example:
//   median_ns({4, 1, 3, 2});        // 3  ((2 + 3) / 2, rounded half up)
//   lower_median_ns({4, 1, 3, 2});  // 2
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "parasim/common/units.hpp"

namespace parasim {

/// Middle value; for an even count the mean of the two middle values, rounded half up (written
/// without overflow). 0 for an empty list.
inline TimeNs median_ns(std::vector<TimeNs> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n % 2 == 1) return values[n / 2];
  const TimeNs lo = values[n / 2 - 1];
  const TimeNs hi = values[n / 2];
  return lo + (hi - lo + 1) / 2;
}

/// Middle value; for an even count the lower of the two middle values, so the result is one of
/// the samples. 0 for an empty list.
inline TimeNs lower_median_ns(std::vector<TimeNs> values) {
  if (values.empty()) return 0;
  const std::size_t mid = (values.size() - 1) / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  return values[mid];
}

/// Middle value; for an even count the mean of the two middle values. 0 for an empty list.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace parasim
