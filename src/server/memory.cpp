#include "server/memory.h"

#include <malloc.h>

namespace roberta::server {

void configure_malloc() {
#ifdef M_MMAP_THRESHOLD
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
}

void release_free_memory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace roberta::server
