#include "pkg/base/heap.h"

#include <cstdlib>  // defines __GLIBC__ on glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace egress::base {

void releaseFreeHeap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void useOneArena() {
#if defined(__GLIBC__)
  mallopt(M_ARENA_MAX, 1);
#endif
}

}  // namespace egress::base
