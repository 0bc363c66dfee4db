#pragma once
// The x86 intrinsics, for the kernels' .cpp files (include it before any other header that pulls
// in <immintrin.h>). GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports inside the headers; nothing of ours is uninitialised. The pragmas
// hold for the rest of the including file.
#if !defined(__clang__)  // (clang has no such warning, and warns about the unknown name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

#if defined(__x86_64__)
#include <immintrin.h>
#endif
