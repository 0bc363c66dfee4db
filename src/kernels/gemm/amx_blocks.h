#pragma once
// The int8 and bf16 products' AMX block loops (kernels/amx_gemm.h), over a tile policy (amx_tiles.h):
// gemm/amx.cpp builds them on the hardware tiles; the tests build them on an emulation.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/amx_gemm.h"
#include "kernels/amx_tiles.h"
#include "kernels/avx512_math.h"
#include "kernels/intrinsics.h"

namespace roberta::kernels::amx_impl {
using namespace amx;

// dst = rows [0, rows) x k units [0, units) of src (row stride ld units), zero elsewhere.
inline void stage_a(TileBuffer& dst, const uint32_t* src, size_t ld, size_t rows, size_t units) {
  std::memset(dst, 0, sizeof(TileBuffer));
  for (size_t r = 0; r < rows; ++r) std::memcpy(dst[r], src + r * ld, units * 4);
}

// dst = the first `rows` 64-byte rows of src (row stride `stride` bytes), zero below.
inline void stage_b(TileBuffer& dst, const uint8_t* src, size_t stride, size_t rows) {
  std::memset(dst, 0, sizeof(TileBuffer));
  for (size_t r = 0; r < rows; ++r) std::memcpy(dst[r], src + r * stride, kRowBytes);
}

// The 32 x 32 accumulators of a block, as the tiles store them (4-byte elements, int32 or fp32).
struct alignas(64) Accumulators {
  uint32_t v[32][32];
};

__attribute__((target("avx512f"))) inline __mmask16 columns_below(size_t cols, size_t c0) {
  return cols <= c0 ? 0 : cols >= c0 + 16 ? 0xFFFF : static_cast<__mmask16>((1u << (cols - c0)) - 1);
}

// y = the block's sums (+ y's earlier slices) (+ bias), as the AVX-512 kernels' epilogues: int8
// (offset set) dequantizes them first, x_scale · w_scale · (sum - offset) as int8_epilogue of
// gemm/int8_avx512.cpp; bf16 (offset null) takes the fp32 sums as they are. With y16 set (one k
// slice only: first), the values go there rounded to bf16 instead of to y.
struct Epilogue {
  const int32_t* offset;
  const float *x_scale, *w_scale, *bias;
  bool first;
  float* y;
  size_t ldy, cols;
  bool gelu;                // y = gelu(y) after the bias
  uint16_t* y16 = nullptr;  // (row stride ldy bf16 values)
  // The first byte of row r, column c of the output (for prefetching).
  const void* at(size_t r, size_t c) const {
    return y16 ? static_cast<const void*>(y16 + r * ldy + c) : static_cast<const void*>(y + r * ldy + c);
  }
  // Rows [rb, re) of the block at row r0, column col0 of y, from its accumulators.
  // (compiled for AVX512-BF16 so that store_bf16 inlines, as a call per store slows the bf16
  // products down; its instructions run only with y16 set, which needs a CPU with them;
  // docs/performance.md#figures-behind-the-code)
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void operator()(const Accumulators& acc, size_t r0,
                                                                                   size_t col0, size_t rb,
                                                                                   size_t re) const {
    for (size_t h = 0; h < 32; h += 16) {
      const size_t c0 = col0 + h;
      const __mmask16 m = columns_below(cols, c0);
      if (!m) continue;
      const __m512i o = offset ? _mm512_maskz_loadu_epi32(m, offset + c0) : _mm512_setzero_si512();
      const __m512 s = offset ? _mm512_maskz_loadu_ps(m, w_scale + c0) : _mm512_setzero_ps();
      const __m512 bv = bias ? _mm512_maskz_loadu_ps(m, bias + c0) : _mm512_setzero_ps();
      for (size_t r = rb; r < re; ++r) {
        const __m512i sum = _mm512_load_si512(&acc.v[r][h]);
        __m512 v = offset ? _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sum, o)),
                                          _mm512_mul_ps(_mm512_set1_ps(x_scale[r0 + r]), s))
                          : _mm512_castsi512_ps(sum);
        if (y16) {
          if (bias) v = _mm512_add_ps(v, bv);
          if (gelu) v = gelu_avx512(v);
          store_bf16(y16 + (r0 + r) * ldy + c0, m, v);
          continue;
        }
        float* out = y + (r0 + r) * ldy + c0;
        if (!first) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, out));
        if (bias) v = _mm512_add_ps(v, bv);
        if (gelu) v = gelu_avx512(v);
        _mm512_mask_storeu_ps(out, m, v);
      }
    }
  }
};

// rows of x (k units [q0, q1), row stride ldx units) times a panel of kColumnTiles x 16 columns
// (k unit q's row of the panel at panel + q * kPanelStride bytes), 32 x 32 blocks at a time:
// tmm0-3 accumulate the block, tmm4-5 hold its two 16-row A tiles, tmm6-7 its two 16-column B tiles.
// A block's epilogue runs a few rows at a time between the next block's tile products (it is
// finished before the next block's accumulators are stored over its own), so that the vector work
// overlaps the tiles' instead of stopping them (docs/performance.md#figures-behind-the-code); the
// last block's runs at the end.
template <class Tiles, bool kInt8, size_t kColumnTiles, size_t kPanelStride>
void amx_chunk(const uint32_t* x, size_t ldx, size_t rows, const uint8_t* panel, size_t q0, size_t q1,
               const Epilogue& epilogue, const uint8_t* next_panel) {
  static_assert(kColumnTiles % 2 == 0, "column tiles go in pairs");
  alignas(64) TileBuffer a_stage[2], b_stage[2];
  Accumulators acc;
  const auto dp = [](auto c, auto a, auto b) {
    if constexpr (kInt8)
      Tiles::template dp_int8<decltype(c)::value, decltype(a)::value, decltype(b)::value>();
    else
      Tiles::template dp_bf16<decltype(c)::value, decltype(a)::value, decltype(b)::value>();
  };
  using T0 = std::integral_constant<int, 0>;
  using T1 = std::integral_constant<int, 1>;
  using T2 = std::integral_constant<int, 2>;
  using T3 = std::integral_constant<int, 3>;
  using A0 = std::integral_constant<int, 4>;
  using A1 = std::integral_constant<int, 5>;
  using B0 = std::integral_constant<int, 6>;
  using B1 = std::integral_constant<int, 7>;
  Tiles::configure();
  // The next panel's k slice into L2, spread evenly over this call's k steps.
  const uint8_t* next = next_panel ? next_panel + q0 * kPanelStride : nullptr;
  const size_t next_lines = next ? (q1 - q0) * kPanelStride / 64 : 0;
  const size_t steps = (q1 - q0 + kUnits - 1) / kUnits;
  const size_t all_steps = (rows + 31) / 32 * (kColumnTiles / 2) * steps;
  const size_t next_per_step = (next_lines + all_steps - 1) / all_steps;
  size_t next_line = 0;
  // The block whose epilogue is pending (its sums in acc): its rows and column in y, and how far
  // its epilogue has got.
  size_t pending_r = 0, pending_rows = 0, pending_col = 0, pending_done = 0;
  for (size_t r = 0; r < rows; r += 32) {
    const size_t nr = std::min<size_t>(32, rows - r);
    const uint32_t* xa = x + r * ldx;
    for (size_t jt = 0; jt < kColumnTiles; jt += 2) {
      Tiles::template zero<0>();
      Tiles::template zero<1>();
      Tiles::template zero<2>();
      Tiles::template zero<3>();
      // This block's rows of y (2 lines a row, 1 for bf16 output), prefetched for writing a few at
      // a time during its products, so that its epilogue's stores (during the next block's) do
      // not wait for their lines (docs/performance.md#figures-behind-the-code).
      const size_t lines_per_row = epilogue.y16 ? 1 : 2, y_lines = lines_per_row * nr;
      const size_t per_step = (y_lines + steps - 1) / steps;
      const size_t epilogue_rows_per_step = (pending_rows + steps - 1) / steps;
      size_t y_line = 0;
      for (size_t q = q0; q < q1; q += kUnits) {
        const size_t units = std::min(kUnits, q1 - q);
        for (size_t i = 0; i < next_per_step && next_line < next_lines; ++i, ++next_line)
          _mm_prefetch(reinterpret_cast<const char*>(next + next_line * 64), _MM_HINT_T1);
        for (size_t i = 0; i < per_step && y_line < y_lines; ++i, ++y_line)
          __builtin_prefetch(epilogue.at(r + y_line / lines_per_row, jt * 16 + (y_line % lines_per_row) * 16), 1, 3);
        if (nr >= 16 && units == kUnits) {
          Tiles::template load<4>(xa + q, ldx * 4);
        } else {
          stage_a(a_stage[0], xa + q, ldx, std::min<size_t>(nr, 16), units);
          Tiles::template load<4>(a_stage[0], kRowBytes);
        }
        if (nr > 16) {
          if (nr == 32 && units == kUnits) {
            Tiles::template load<5>(xa + 16 * ldx + q, ldx * 4);
          } else {
            stage_a(a_stage[1], xa + 16 * ldx + q, ldx, nr - 16, units);
            Tiles::template load<5>(a_stage[1], kRowBytes);
          }
        }
        const uint8_t* b = panel + q * kPanelStride + jt * kRowBytes;
        if (units == kUnits) {
          Tiles::template load<6>(b, kPanelStride);
          Tiles::template load<7>(b + kRowBytes, kPanelStride);
        } else {
          stage_b(b_stage[0], b, kPanelStride, units);
          stage_b(b_stage[1], b + kRowBytes, kPanelStride, units);
          Tiles::template load<6>(b_stage[0], kRowBytes);
          Tiles::template load<7>(b_stage[1], kRowBytes);
        }
        dp(T0{}, A0{}, B0{});
        dp(T1{}, A0{}, B1{});
        if (nr > 16) {
          dp(T2{}, A1{}, B0{});
          dp(T3{}, A1{}, B1{});
        }
        if (pending_done < pending_rows) {  // the block before's epilogue, a few rows
          const size_t end = std::min(pending_rows, pending_done + epilogue_rows_per_step);
          epilogue(acc, pending_r, pending_col, pending_done, end);
          pending_done = end;
        }
      }
      if (pending_done < pending_rows) epilogue(acc, pending_r, pending_col, pending_done, pending_rows);
      Tiles::template store<0>(&acc.v[0][0], sizeof acc.v[0]);
      Tiles::template store<1>(&acc.v[0][16], sizeof acc.v[0]);
      if (nr > 16) {
        Tiles::template store<2>(&acc.v[16][0], sizeof acc.v[0]);
        Tiles::template store<3>(&acc.v[16][16], sizeof acc.v[0]);
      }
      pending_r = r, pending_rows = nr, pending_col = jt * 16, pending_done = 0;
    }
  }
  if (pending_done < pending_rows) epilogue(acc, pending_r, pending_col, pending_done, pending_rows);
  Tiles::release();
}

// int8 panels: 64 columns (4 column tiles), 256 bytes per k quad (packed_gemm_int8.h).
template <class Tiles>
void int8_amx(const uint32_t* xq, size_t ldq, size_t rows, const int8_t* panel, size_t q0, size_t q1,
              const int32_t* offset, const float* x_scale, const float* w_scale, const float* bias, bool first,
              float* y, size_t ldy, size_t cols, bool gelu, uint16_t* y16, const void* next_panel) {
  amx_chunk<Tiles, true, 4, 256>(
      xq, ldq, rows, reinterpret_cast<const uint8_t*>(panel), q0, q1,
      Epilogue{offset, x_scale, w_scale, bias, first, y, ldy, cols, gelu, y16},
      static_cast<const uint8_t*>(next_panel));
}

// bf16 panels: 32 columns (2 column tiles), 128 bytes per k pair (packed_gemm.h).
template <class Tiles>
void bf16_amx(const uint32_t* xb, size_t ldx_pairs, size_t rows, const uint16_t* panel, size_t q0, size_t q1,
              const float* bias, bool first, float* y, size_t ldy, size_t cols, bool gelu, uint16_t* y16,
              const void* next_panel) {
  amx_chunk<Tiles, false, 2, 128>(xb, ldx_pairs, rows, reinterpret_cast<const uint8_t*>(panel), q0, q1,
                                  Epilogue{nullptr, nullptr, nullptr, bias, first, y, ldy, cols, gelu, y16},
                                  static_cast<const uint8_t*>(next_panel));
}

}  // namespace roberta::kernels::amx_impl
