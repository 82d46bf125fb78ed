// PARASIM_ASSERT(cond): an invariant check for debug builds (no NDEBUG: the sanitizer build of
// scripts/sanitize.sh). It costs nothing in Release, so it may guard hot accessors (TaskGraph's
// columns are indexed unchecked otherwise). Failing prints the condition, file and line to
// stderr and aborts: a broken invariant is a bug in parasim, never bad input (that is InputError).
//
// Example:
//   PARASIM_ASSERT(t >= 0 && static_cast<std::size_t>(t) < size());
#pragma once

#include <cstdio>
#include <cstdlib>

namespace parasim::detail {

[[noreturn]] inline void assert_failed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "parasim: internal error: PARASIM_ASSERT(%s) failed at %s:%d\n", condition, file, line);
  std::abort();
}

}  // namespace parasim::detail

#ifdef NDEBUG
#define PARASIM_ASSERT(cond) ((void)0)
#else
#define PARASIM_ASSERT(cond) ((cond) ? (void)0 : ::parasim::detail::assert_failed(#cond, __FILE__, __LINE__))
#endif
