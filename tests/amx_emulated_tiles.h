#pragma once
// AMX's tile instructions emulated in C++ (the policy of src/kernels/amx_tiles.h), so that the AMX
// kernels, templates on the policy, run in the tests on any CPU.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/amx_tiles.h"

namespace roberta::kernels::amx {

// The same instructions in C++, per Intel's SDM (TILELOADD, TILESTORED, TILEZERO, TDPBUSD,
// TDPBF16PS with every tile 16 rows x 64 bytes), on a per-thread tile file.
struct EmulatedTiles {
  struct File {
    alignas(64) uint8_t tile[8][kTileRows][kRowBytes];
  };
  static File& file() {
    thread_local File f;
    return f;
  }
  static void configure() {}
  static void release() {}
  template <int T>
  static void zero() {
    std::memset(file().tile[T], 0, sizeof(TileBuffer));
  }
  template <int T>
  static void load(const void* p, size_t stride) {
    for (size_t r = 0; r < kTileRows; ++r)
      std::memcpy(file().tile[T][r], static_cast<const uint8_t*>(p) + r * stride, kRowBytes);
  }
  template <int T>
  static void store(void* p, size_t stride) {
    for (size_t r = 0; r < kTileRows; ++r)
      std::memcpy(static_cast<uint8_t*>(p) + r * stride, file().tile[T][r], kRowBytes);
  }
  // C[m][n] (int32) += sum over k < 16, i < 4 of u8(A[m][4k + i]) · s8(B[k][4n + i]).
  template <int C, int A, int B>
  static void dp_int8() {
    static_assert(C != A && C != B && A != B, "TDPBUSD faults unless its three tiles differ");
    File& f = file();
    for (size_t m = 0; m < kTileRows; ++m)
      for (size_t n = 0; n < kRowBytes / 4; ++n) {
        int32_t c;
        std::memcpy(&c, &f.tile[C][m][4 * n], 4);
        for (size_t k = 0; k < kUnits; ++k)
          for (size_t i = 0; i < 4; ++i)
            c += static_cast<int32_t>(f.tile[A][m][4 * k + i]) * static_cast<int8_t>(f.tile[B][k][4 * n + i]);
        std::memcpy(&f.tile[C][m][4 * n], &c, 4);
      }
  }
  // TDPBF16PS as the SDM writes it: per output, two fp32 partial sums from zero, one over the even
  // and one over the odd elements of the 16 pairs, each step an FMA with denormal inputs read as
  // zero and denormal results flushed to zero (DAZ = FTZ = 1, round to nearest even), and at the
  // end C += even + odd. (Real silicon need not match this bit for bit: the tests compare the
  // hardware's bf16 results with a float64 reference, not with this.)
  template <int C, int A, int B>
  static void dp_bf16() {
    static_assert(C != A && C != B && A != B, "TDPBF16PS faults unless its three tiles differ");
    File& f = file();
    const auto flush = [](float v) { return std::fabs(v) < std::numeric_limits<float>::min() ? 0.0f * v : v; };
    const auto bf16 = [&](const uint8_t* p) {
      const uint32_t bits = (uint32_t{p[0]} | uint32_t{p[1]} << 8) << 16;
      float v;
      std::memcpy(&v, &bits, 4);
      return flush(v);
    };
    for (size_t m = 0; m < kTileRows; ++m)
      for (size_t n = 0; n < kRowBytes / 4; ++n) {
        float even = 0, odd = 0, c;
        for (size_t k = 0; k < kUnits; ++k) {
          even = flush(std::fma(bf16(&f.tile[A][m][4 * k]), bf16(&f.tile[B][k][4 * n]), even));
          odd = flush(std::fma(bf16(&f.tile[A][m][4 * k + 2]), bf16(&f.tile[B][k][4 * n + 2]), odd));
        }
        std::memcpy(&c, &f.tile[C][m][4 * n], 4);
        c = flush(flush(c) + flush(even + odd));
        std::memcpy(&f.tile[C][m][4 * n], &c, 4);
      }
  }
};

}  // namespace roberta::kernels::amx
