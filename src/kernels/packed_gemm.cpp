#include "packed_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../thread_pool.h"

namespace roberta::kernels {

PackedWeight::PackedWeight(const float* w, size_t n, size_t k)
    : n_(n), k_(k), data_(static_cast<float*>(::operator new[](bytes(), std::align_val_t(64)))) {
  // Panels are independent: pack them on the thread pool. Within a panel, walk k in tiles so
  // that both the 32 source rows and the destination stay in cache.
  ThreadPool::global().parallel_for(panels(), [&](size_t p) {
    float* dst = data_.get() + p * k * kPanel;
    const size_t rows = std::min(kPanel, n - p * kPanel);
    if (rows < kPanel) std::memset(dst, 0, k * kPanel * sizeof(float));
    for (size_t k0 = 0; k0 < k; k0 += 64)
      for (size_t j = 0; j < rows; ++j) {
        const float* src = w + (p * kPanel + j) * k;
        for (size_t kk = k0; kk < std::min(k, k0 + 64); ++kk) dst[kk * kPanel + j] = src[kk];
      }
  });
}

namespace {

constexpr size_t kRows = 8;     // rows of y per register block
constexpr size_t kDepth = 256;  // k per pass, so an 8 x kDepth slice of x stays in L1

// One block: y[r][0..cols) (+)= sum over k in [k0, k1) of x[r][k] * panel[k][0..32), r < rows.
// `first` means the block is written for the first time: start from the bias (or zero).
using BlockFn = void (*)(const float* x, size_t ldx, size_t rows, const float* panel, size_t k0, size_t k1,
                         const float* bias, bool first, float* y, size_t ldy, size_t cols);

void block_portable(const float* x, size_t ldx, size_t rows, const float* panel, size_t k0, size_t k1,
                    const float* bias, bool first, float* y, size_t ldy, size_t cols) {
  float acc[kRows][PackedWeight::kPanel];
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < PackedWeight::kPanel; ++j)
      acc[r][j] = first ? (bias && j < cols ? bias[j] : 0.0f) : (j < cols ? y[r * ldy + j] : 0.0f);
  for (size_t k = k0; k < k1; ++k) {
    const float* b = panel + k * PackedWeight::kPanel;
    for (size_t r = 0; r < rows; ++r) {
      const float a = x[r * ldx + k];
      for (size_t j = 0; j < PackedWeight::kPanel; ++j) acc[r][j] += a * b[j];
    }
  }
  for (size_t r = 0; r < rows; ++r) std::memcpy(y + r * ldy, acc[r], cols * sizeof(float));
}

#if defined(__x86_64__)
__attribute__((target("avx512f")))
void block_avx512(const float* x, size_t ldx, size_t rows, const float* panel, size_t k0, size_t k1,
                  const float* bias, bool first, float* y, size_t ldy, size_t cols) {
  const __mmask16 m0 = cols >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : static_cast<__mmask16>((1u << (cols - 16)) - 1);
  __m512 c0[kRows], c1[kRows];
  for (size_t r = 0; r < kRows; ++r) {
    if (r >= rows) {
      c0[r] = c1[r] = _mm512_setzero_ps();
    } else if (first) {
      c0[r] = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
      c1[r] = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
    } else {
      c0[r] = _mm512_maskz_loadu_ps(m0, y + r * ldy);
      c1[r] = _mm512_maskz_loadu_ps(m1, y + r * ldy + 16);
    }
  }
  if (rows == kRows) {
    const float* a = x + k0;
    for (size_t k = k0; k < k1; ++k, ++a) {
      const __m512 b0 = _mm512_load_ps(panel + k * 32);
      const __m512 b1 = _mm512_load_ps(panel + k * 32 + 16);
#define ROBERTA_ROW(r)                                           \
  {                                                              \
    const __m512 av = _mm512_set1_ps(a[(r) * ldx]);              \
    c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);                      \
    c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);                      \
  }
      ROBERTA_ROW(0) ROBERTA_ROW(1) ROBERTA_ROW(2) ROBERTA_ROW(3)
      ROBERTA_ROW(4) ROBERTA_ROW(5) ROBERTA_ROW(6) ROBERTA_ROW(7)
#undef ROBERTA_ROW
    }
  } else {
    for (size_t k = k0; k < k1; ++k) {
      const __m512 b0 = _mm512_load_ps(panel + k * 32);
      const __m512 b1 = _mm512_load_ps(panel + k * 32 + 16);
      for (size_t r = 0; r < rows; ++r) {
        const __m512 av = _mm512_set1_ps(x[r * ldx + k]);
        c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
        c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
      }
    }
  }
  for (size_t r = 0; r < rows; ++r) {
    _mm512_mask_storeu_ps(y + r * ldy, m0, c0[r]);
    _mm512_mask_storeu_ps(y + r * ldy + 16, m1, c1[r]);
  }
}

// AVX2: the 8 x 32 block as two passes of 4 rows x 32 columns (16 accumulators).
__attribute__((target("avx2,fma")))
void block_avx2(const float* x, size_t ldx, size_t rows, const float* panel, size_t k0, size_t k1,
                const float* bias, bool first, float* y, size_t ldy, size_t cols) {
  if (cols < PackedWeight::kPanel) {  // a ragged last panel: the portable loop
    block_portable(x, ldx, rows, panel, k0, k1, bias, first, y, ldy, cols);
    return;
  }
  for (size_t r0 = 0; r0 < rows; r0 += 4) {
    const size_t n = std::min<size_t>(4, rows - r0);
    __m256 c[4][4];
    for (size_t r = 0; r < 4; ++r)
      for (size_t q = 0; q < 4; ++q)
        c[r][q] = r >= n ? _mm256_setzero_ps()
                  : first ? (bias ? _mm256_loadu_ps(bias + 8 * q) : _mm256_setzero_ps())
                          : _mm256_loadu_ps(y + (r0 + r) * ldy + 8 * q);
    for (size_t k = k0; k < k1; ++k) {
      const float* b = panel + k * 32;
      const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8), b2 = _mm256_load_ps(b + 16),
                   b3 = _mm256_load_ps(b + 24);
      for (size_t r = 0; r < n; ++r) {
        const __m256 av = _mm256_broadcast_ss(x + (r0 + r) * ldx + k);
        c[r][0] = _mm256_fmadd_ps(av, b0, c[r][0]);
        c[r][1] = _mm256_fmadd_ps(av, b1, c[r][1]);
        c[r][2] = _mm256_fmadd_ps(av, b2, c[r][2]);
        c[r][3] = _mm256_fmadd_ps(av, b3, c[r][3]);
      }
    }
    for (size_t r = 0; r < n; ++r)
      for (size_t q = 0; q < 4; ++q) _mm256_storeu_ps(y + (r0 + r) * ldy + 8 * q, c[r][q]);
  }
}
#endif

struct Kernel {
  BlockFn fn;
  const char* isa;
};

// ROBERTA_ISA=avx2 or =portable caps the choice (to test every path on one machine).
Kernel pick_kernel() {
  const char* cap = std::getenv("ROBERTA_ISA");
  const std::string limit = cap ? cap : "";
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (limit.empty() && __builtin_cpu_supports("avx512f")) return {block_avx512, "avx512"};
  if ((limit.empty() || limit == "avx2") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {block_avx2, "avx2"};
#endif
  return {block_portable, "portable"};
}

const Kernel& kernel() {
  static const Kernel k = pick_kernel();
  return k;
}

}  // namespace

const char* packed_gemm_isa() { return kernel().isa; }

void packed_linear(const float* x, size_t M, const PackedWeight& w, const float* bias, float* y, size_t ldy) {
  const size_t K = w.k(), N = w.n(), P = w.panels();
  if (M == 0 || N == 0) return;
  const BlockFn block = kernel().fn;
  ThreadPool& pool = ThreadPool::global();
  // Contiguous ranges of panels per task; a few more tasks than threads balance uneven speeds.
  const size_t tasks = std::min(P, static_cast<size_t>(pool.num_threads()) * (M >= 64 ? 4 : 1));
  pool.parallel_for(tasks, [&](size_t t) {
    const size_t p0 = P * t / tasks, p1 = P * (t + 1) / tasks;
    // Blocks of 64 rows x all of this task's panels, k in slices: the x slice stays in cache
    // while the panels stream past it.
    for (size_t m0 = 0; m0 < M; m0 += 64) {
      const size_t m1 = std::min(M, m0 + 64);
      for (size_t k0 = 0; k0 < K; k0 += kDepth) {
        const size_t k1 = std::min(K, k0 + kDepth);
        for (size_t p = p0; p < p1; ++p) {
          const size_t col = p * PackedWeight::kPanel;
          const size_t cols = std::min(PackedWeight::kPanel, N - col);
          for (size_t r = m0; r < m1; r += kRows)
            block(x + r * K, K, std::min(kRows, m1 - r), w.panel(p), k0, k1, bias ? bias + col : nullptr, k0 == 0,
                  y + r * ldy + col, ldy, cols);
        }
      }
    }
  });
}

}  // namespace roberta::kernels

// ---------------------------------------------------------------- bfloat16

namespace roberta::kernels {

uint16_t to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

static float from_bf16(uint16_t h) {
  const uint32_t bits = uint32_t{h} << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

PackedWeightBf16::PackedWeightBf16(const float* w, size_t n, size_t k)
    : n_(n), k_(k), data_(static_cast<uint16_t*>(::operator new[](bytes(), std::align_val_t(64)))) {
  ThreadPool::global().parallel_for(panels(), [&](size_t p) {
    uint16_t* dst = data_.get() + p * k_pairs() * kPanel * 2;
    std::memset(dst, 0, k_pairs() * kPanel * 2 * sizeof(uint16_t));
    for (size_t j = 0; j < kPanel && p * kPanel + j < n; ++j) {
      const float* src = w + (p * kPanel + j) * k;
      for (size_t kk = 0; kk < k; ++kk) dst[(kk / 2) * kPanel * 2 + j * 2 + kk % 2] = to_bf16(src[kk]);
    }
  });
}

namespace {

// xb: x rounded to bf16, (rows, 2 * k_pairs), read as uint32 pairs.
using Bf16BlockFn = void (*)(const uint32_t* xb, size_t ldx_pairs, size_t rows, const uint16_t* panel, size_t q0,
                             size_t q1, const float* bias, bool first, float* y, size_t ldy, size_t cols);

void bf16_block_portable(const uint32_t* xb, size_t ldx_pairs, size_t rows, const uint16_t* panel, size_t q0, size_t q1,
                         const float* bias, bool first, float* y, size_t ldy, size_t cols) {
  float acc[kRows][32];
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < 32; ++j)
      acc[r][j] = first ? (bias && j < cols ? bias[j] : 0.0f) : (j < cols ? y[r * ldy + j] : 0.0f);
  for (size_t q = q0; q < q1; ++q) {
    const uint16_t* b = panel + q * 64;
    for (size_t r = 0; r < rows; ++r) {
      const uint32_t pair = xb[r * ldx_pairs + q];
      const float a0 = from_bf16(static_cast<uint16_t>(pair & 0xFFFF)), a1 = from_bf16(static_cast<uint16_t>(pair >> 16));
      for (size_t j = 0; j < 32; ++j) acc[r][j] += a0 * from_bf16(b[2 * j]) + a1 * from_bf16(b[2 * j + 1]);
    }
  }
  for (size_t r = 0; r < rows; ++r) std::memcpy(y + r * ldy, acc[r], cols * sizeof(float));
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
#define ROBERTA_HAVE_BF16_KERNEL 1
__attribute__((target("avx512f,avx512bf16")))
void bf16_block_avx512(const uint32_t* xb, size_t ldx_pairs, size_t rows, const uint16_t* panel, size_t q0, size_t q1,
                       const float* bias, bool first, float* y, size_t ldy, size_t cols) {
  const __mmask16 m0 = cols >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : static_cast<__mmask16>((1u << (cols - 16)) - 1);
  __m512 c0[kRows], c1[kRows];
  for (size_t r = 0; r < kRows; ++r) {
    if (r >= rows) {
      c0[r] = c1[r] = _mm512_setzero_ps();
    } else if (first) {
      c0[r] = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
      c1[r] = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
    } else {
      c0[r] = _mm512_maskz_loadu_ps(m0, y + r * ldy);
      c1[r] = _mm512_maskz_loadu_ps(m1, y + r * ldy + 16);
    }
  }
  for (size_t q = q0; q < q1; ++q) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(panel + q * 64);
    const __m512bh b1 = (__m512bh)_mm512_load_si512(panel + q * 64 + 32);
    for (size_t r = 0; r < kRows; ++r) {
      if (r >= rows) break;
      const __m512bh a = (__m512bh)_mm512_set1_epi32(static_cast<int>(xb[r * ldx_pairs + q]));
      c0[r] = _mm512_dpbf16_ps(c0[r], a, b0);
      c1[r] = _mm512_dpbf16_ps(c1[r], a, b1);
    }
  }
  for (size_t r = 0; r < rows; ++r) {
    _mm512_mask_storeu_ps(y + r * ldy, m0, c0[r]);
    _mm512_mask_storeu_ps(y + r * ldy + 16, m1, c1[r]);
  }
}
#endif

Bf16BlockFn pick_bf16_kernel() {
#if defined(ROBERTA_HAVE_BF16_KERNEL)
  const char* cap = std::getenv("ROBERTA_ISA");
  __builtin_cpu_init();
  if (!cap && __builtin_cpu_supports("avx512bf16")) return bf16_block_avx512;
#endif
  return bf16_block_portable;
}

}  // namespace

bool has_bf16_instructions() {
#if defined(ROBERTA_HAVE_BF16_KERNEL)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

void packed_linear(const float* x, size_t M, const PackedWeightBf16& w, const float* bias, float* y, size_t ldy) {
  const size_t K = w.k(), N = w.n(), P = w.panels(), Q = w.k_pairs();
  if (M == 0 || N == 0) return;
  static const Bf16BlockFn block = pick_bf16_kernel();
  // x rounded to bf16 once per call, k padded to pairs.
  thread_local std::vector<uint32_t> xb;
  xb.assign(M * Q, 0);
  for (size_t m = 0; m < M; ++m)
    for (size_t k = 0; k < K; ++k)
      xb[m * Q + k / 2] |= static_cast<uint32_t>(to_bf16(x[m * K + k])) << (16 * (k % 2));
  const uint32_t* xp = xb.data();
  ThreadPool& pool = ThreadPool::global();
  const size_t tasks = std::min(P, static_cast<size_t>(pool.num_threads()) * (M >= 64 ? 4 : 1));
  constexpr size_t kPairDepth = kDepth / 2;
  pool.parallel_for(tasks, [&](size_t t) {
    const size_t p0 = P * t / tasks, p1 = P * (t + 1) / tasks;
    for (size_t m0 = 0; m0 < M; m0 += 64) {
      const size_t m1 = std::min(M, m0 + 64);
      for (size_t q0 = 0; q0 < Q; q0 += kPairDepth) {
        const size_t q1 = std::min(Q, q0 + kPairDepth);
        for (size_t p = p0; p < p1; ++p) {
          const size_t col = p * PackedWeightBf16::kPanel;
          const size_t cols = std::min(PackedWeightBf16::kPanel, N - col);
          for (size_t r = m0; r < m1; r += kRows)
            block(xp + r * Q, Q, std::min(kRows, m1 - r), w.panel(p), q0, q1, bias ? bias + col : nullptr, q0 == 0,
                  y + r * ldy + col, ldy, cols);
        }
      }
    }
  });
}

}  // namespace roberta::kernels
