#pragma once
// AMX's tile instructions as a policy, internal to the kernels: HardwareTiles (inline assembly;
// only where usable_isa() >= Isa::kAmx). The kernels written against it (gemm/amx_blocks.h,
// attention/amx_head.h) are templates on the policy, so that the tests build them on tiles
// emulated in C++ too (tests/amx_emulated_tiles.h) and run them on any CPU. One palette for all:
// the 8 tiles 16 rows x 64 bytes.
#include <cstddef>
#include <cstdint>

namespace roberta::kernels::amx {

constexpr size_t kRowBytes = 64;  // bytes in a tile row: 16 k units (int8 quads, bf16 pairs) of A, 16 columns of B or C
constexpr size_t kUnits = 16;     // k units per A tile row = B tile rows
constexpr size_t kTileRows = 16;

using TileBuffer = uint8_t[kTileRows][kRowBytes];

// Palette 1 with all 8 tiles at their largest, 16 rows x 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {kRowBytes, kRowBytes, kRowBytes, kRowBytes, kRowBytes, kRowBytes, kRowBytes, kRowBytes};
  uint8_t rows[16] = {kTileRows, kTileRows, kTileRows, kTileRows, kTileRows, kTileRows, kTileRows, kTileRows};
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

#if defined(__x86_64__) && defined(__GNUC__)
// The instructions as inline assembly (GCC's _tile_* macros want literal tile numbers; "%c" prints
// a template's constant). Loads and stores clobber memory so that staging copies and the
// epilogue's reads stay on their side of them. Intel syntax "tdpbusd C, A, B" is AT&T "B, A, C".
struct HardwareTiles {
  static void configure() {
    static const TileConfig config;  // (a function-local static: one per program, not per includer)
    asm volatile("ldtilecfg %0" ::"m"(config));
  }
  static void release() { asm volatile("tilerelease" ::); }
  template <int T>
  static void zero() {
    asm volatile("tilezero %%tmm%c0" ::"n"(T));
  }
  template <int T>
  static void load(const void* p, size_t stride) {
    asm volatile("tileloadd (%0,%1,1), %%tmm%c2" ::"r"(p), "r"(stride), "n"(T) : "memory");
  }
  template <int T>
  static void store(void* p, size_t stride) {
    asm volatile("tilestored %%tmm%c2, (%0,%1,1)" ::"r"(p), "r"(stride), "n"(T) : "memory");
  }
  template <int C, int A, int B>
  static void dp_int8() {
    static_assert(C != A && C != B && A != B, "TDPBUSD faults unless its three tiles differ");
    asm volatile("tdpbusd %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"n"(C), "n"(A), "n"(B));
  }
  template <int C, int A, int B>
  static void dp_bf16() {
    static_assert(C != A && C != B && A != B, "TDPBF16PS faults unless its three tiles differ");
    asm volatile("tdpbf16ps %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"n"(C), "n"(A), "n"(B));
  }
};
#endif

}  // namespace roberta::kernels::amx
