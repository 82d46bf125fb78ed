#include "parasim/common/allocator.hpp"

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

}  // namespace parasim
