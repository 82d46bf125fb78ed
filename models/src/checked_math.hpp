// Overflow-checked int64 arithmetic for shapes and costs.
//
// A user's JSON model can ask for absurd sizes (a 1e12 x 1e12 linear layer); products that do
// not fit in int64 must become an InputError naming the op, never a silently wrapped number.
// The helpers throw ArithmeticOverflow, which op inference turns into that InputError.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>

namespace parasim::models::detail {

struct ArithmeticOverflow : std::overflow_error {
  ArithmeticOverflow() : std::overflow_error("64-bit integer overflow") {}
};

inline std::int64_t mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw ArithmeticOverflow();
  return r;
}

inline std::int64_t mul(std::initializer_list<std::int64_t> factors) {
  std::int64_t r = 1;
  for (std::int64_t f : factors) r = mul(r, f);
  return r;
}

inline std::int64_t add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw ArithmeticOverflow();
  return r;
}

inline std::int64_t add(std::initializer_list<std::int64_t> terms) {
  std::int64_t r = 0;
  for (std::int64_t t : terms) r = add(r, t);
  return r;
}

}  // namespace parasim::models::detail
