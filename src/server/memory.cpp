#include "server/memory.h"

#include <malloc.h>

namespace roberta::server {

void release_free_memory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace roberta::server
