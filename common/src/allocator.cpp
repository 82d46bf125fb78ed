#include "parasim/common/allocator.hpp"

#include <mutex>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace parasim {

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  // Blocks up to 256 MiB come from the heap (and are reused), and up to 512 MiB of free heap stay
  // in the process; both also stop glibc's dynamic threshold adjustment.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
}

void keep_until_exit(std::shared_ptr<const void> p) {
  // Never destroyed (on purpose): a static vector's destructor would free everything at exit.
  static std::mutex* mu = new std::mutex;
  static auto* kept = new std::vector<std::shared_ptr<const void>>;
  std::lock_guard lock(*mu);
  kept->push_back(std::move(p));
}

}  // namespace parasim
