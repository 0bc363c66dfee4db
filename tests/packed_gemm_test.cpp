// The packed GEMM against a float64 reference, over shapes that hit every edge: rows not a
// multiple of the row block (fp32: 12 on Intel's AVX-512 above 32 rows, 6 with AVX2, else 8;
// bf16: 12 with AVX512-BF16, else the fp32 kernel's on widened values), every
// count of last rows of a 12-row block, rows not a multiple of the 16-block chunk, columns not a multiple of
// the 32-column panel, k in one pass and in two (k slices: at most 1024 deep for fp32 and bf16,
// 3072 for int8), with and without bias, a strided output, and the fused activation.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <utility>

#include "kernels/activations.h"
#include "kernels/block_loop.h"
#include "kernels/isa.h"
#include "kernels/packed_gemm.h"
#include "kernels/packed_gemm_int8.h"
#include "roberta/error.h"
#include "roberta/threads.h"
#include "rows_done_check.h"

namespace {

TEST(PackedGemm, MatchesFloat64Reference) {
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::printf("  kernel: %s\n", roberta::kernels::packed_gemm_isa());
  // 33-47 end a 12-row block with each count of rows from 1 to 11
  for (size_t M : {1, 3, 8, 12, 13, 30, 33, 37, 38, 39, 42, 43, 44, 47, 64, 70, 100, 197}) {
    for (size_t N : {1, 31, 32, 33, 100, 768}) {
      for (size_t K : {1, 7, 256, 300, 770, 1030}) {  // 1030: two k passes
        if (M * N * K > 20'000'000) continue;
        std::vector<float> x(M * K), w(N * K), bias(N);
        for (auto& v : x) v = dist(rng);
        for (auto& v : w) v = dist(rng);
        for (auto& v : bias) v = dist(rng);
        const roberta::kernels::PackedWeight packed(w.data(), N, K);
        for (const bool with_bias : {false, true}) {
          const size_t ldy = N + 5;
          std::vector<float> y(M * ldy, -7.0f);
          roberta::kernels::packed_linear(y.data(), ldy, x.data(), packed, with_bias ? bias.data() : nullptr, M);
          double max_err = 0;
          for (size_t m = 0; m < M; ++m) {
            for (size_t n = 0; n < N; ++n) {
              double want = with_bias ? bias[n] : 0.0;
              for (size_t k = 0; k < K; ++k) want += static_cast<double>(x[m * K + k]) * w[n * K + k];
              max_err = std::max(max_err, std::abs(want - y[m * ldy + n]) / std::sqrt(static_cast<double>(K)));
            }
            for (size_t n = N; n < ldy; ++n) ASSERT_EQ(y[m * ldy + n], -7.0f) << "wrote past N";
          }
          EXPECT_LT(max_err, 1e-5) << "M=" << M << " N=" << N << " K=" << K << " bias=" << with_bias;
        }
      }
    }
  }
}

// FusedActivationEqualsSeparatePass for one shape.
void check_fused_activation(size_t M, size_t K) {
  SCOPED_TRACE("M=" + std::to_string(M) + " K=" + std::to_string(K));
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const size_t N = 300, ldy = N + 2;
  std::vector<float> x(M * K), w(N * K), bias(N);
  for (auto& v : x) v = dist(rng);
  for (auto& v : w) v = dist(rng);
  for (auto& v : bias) v = dist(rng);
  const roberta::kernels::PackedWeight packed(w.data(), N, K);
  const roberta::kernels::PackedWeightBf16 packed_bf16(w.data(), N, K);
  for (const auto act : {roberta::kernels::Activation::kGelu, roberta::kernels::Activation::kRelu, roberta::kernels::Activation::kTanh}) {
    std::vector<float> plain(M * ldy, -7.0f), fused(M * ldy, -7.0f), plain_bf16(M * ldy), fused_bf16(M * ldy);
    roberta::kernels::packed_linear(plain.data(), ldy, x.data(), packed, bias.data(), M);
    roberta::kernels::packed_linear(fused.data(), ldy, x.data(), packed, bias.data(), M, act);
    roberta::kernels::packed_linear(plain_bf16.data(), ldy, x.data(), packed_bf16, bias.data(), M);
    roberta::kernels::packed_linear(fused_bf16.data(), ldy, x.data(), packed_bf16, bias.data(), M, act);
    std::vector<float> separate = plain, separate_bf16 = plain_bf16;  // the pass the model ran before fusing
    roberta::kernels::bias_activation(separate.data(), nullptr, M, ldy, act);
    roberta::kernels::bias_activation(separate_bf16.data(), nullptr, M, ldy, act);
    for (size_t m = 0; m < M; ++m) {
      for (size_t n = 0; n < N; ++n) {
        ASSERT_EQ(fused[m * ldy + n], separate[m * ldy + n]) << m << "," << n;
        ASSERT_EQ(fused_bf16[m * ldy + n], separate_bf16[m * ldy + n]) << m << "," << n;
        const float want = roberta::kernels::activate(act, plain[m * ldy + n]);
        ASSERT_NEAR(fused[m * ldy + n], want, 1e-6 * std::max(1.0f, std::abs(want)));
      }
      ASSERT_EQ(fused[m * ldy + N], -7.0f) << "wrote past N";
    }
  }
}

// The activation applied by the GEMM's epilogue equals the activation applied afterwards, on
// every tile of a product split over several tasks and row chunks: with one k slice and two (GELU
// then applied by the store of the last one), in large and small (<= 32 rows) products.
TEST(PackedGemm, FusedActivationEqualsSeparatePass) {
  for (const auto& [M, K] : {std::pair<size_t, size_t>{197, 64}, {197, 1030}, {20, 1030}})
    check_fused_activation(M, K);
}

}  // namespace

namespace {

float round_bf16(float f) {
  const uint16_t h = roberta::kernels::to_bf16(f);
  const uint32_t bits = uint32_t{h} << 16;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

// A random bf16 product: x (M, K), w (N, K), bias (N) from N(0, 1), w packed; y has 3 columns past N.
struct Bf16Case {
  size_t M, N, K;
  std::vector<float> x, w, bias;
  roberta::kernels::PackedWeightBf16 packed;
  Bf16Case(size_t m, size_t n, size_t k, std::mt19937& rng) : M(m), N(n), K(k), x(m * k), w(n * k), bias(n) {
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (auto& v : x) v = dist(rng);
    for (auto& v : w) v = dist(rng);
    for (auto& v : bias) v = dist(rng);
    packed = roberta::kernels::PackedWeightBf16(w.data(), N, K);
  }
  bool use_bias = true;  // whether the product is given the bias (error() expects it where it is)
  const float* bias_arg() const { return use_bias ? bias.data() : nullptr; }
  size_t ldy() const { return N + 3; }
  std::vector<float> fresh_y() const { return std::vector<float>(M * ldy(), -7.0f); }
  // max over y of |float64 of the bf16-rounded x and w - y| / sqrt(K), after checking nothing was
  // written past N (1e30 if it was).
  double error(const std::vector<float>& y) const {
    double worst = 0;
    for (size_t m = 0; m < M; ++m) {
      for (size_t n = 0; n < N; ++n) {
        double want = use_bias ? bias[n] : 0.0;
        for (size_t k = 0; k < K; ++k) want += static_cast<double>(round_bf16(x[m * K + k])) * round_bf16(w[n * K + k]);
        worst = std::max(worst, std::abs(want - y[m * ldy() + n]) / std::sqrt(static_cast<double>(K)));
      }
      for (size_t n = N; n < ldy(); ++n)
        if (y[m * ldy() + n] != -7.0f) return 1e30;  // wrote past N
    }
    return worst;
  }
};

// fp32 x and x given as pairs (to_bf16_pairs) give the same bytes on zeros, denormals, ties both
// ways, values that round up to infinity, infinities and NaNs of either sign (rounded by different
// passes where the product widens; to_bf16_row's test checks the pairs' rounding); k odd and past
// a vector (37).
TEST(PackedGemmBf16, Fp32AndPairsInputAgreeOnSpecialValues) {
  const uint32_t specials[] = {0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00008000, 0x00018000,
                               0x3F808000, 0x3F818000, 0x3F808001, 0xBF818000, 0x7F7FFFFF, 0xFF7FFFFF,
                               0x7F800000, 0xFF800000, 0x7F800001, 0x7FBFFFFF, 0xFFC00000, 0x7FFFFFFF};
  std::mt19937 rng(9);
  const size_t S = std::size(specials), M = 2 * S, N = 40, K = 37;
  Bf16Case c(M, N, K, rng);
  // One special value a row (a NaN or an infinity makes its whole row of y NaN or infinite): each
  // once within the first 32 values (vector loops) and once in the last 5 (their scalar tails).
  for (size_t m = 0; m < M; ++m)
    c.x[m * K + (m < S ? (m * 5) % 32 : 32 + m % 5)] = std::bit_cast<float>(specials[m % S]);
  std::vector<float> y = c.fresh_y(), from_pairs = c.fresh_y();
  roberta::kernels::packed_linear(y.data(), c.ldy(), c.x.data(), c.packed, c.bias_arg(), M);
  std::vector<uint32_t> pairs(M * ((K + 1) / 2));
  roberta::kernels::to_bf16_pairs(c.x.data(), M, K, pairs.data());
  roberta::kernels::packed_linear(from_pairs.data(), c.ldy(), roberta::kernels::Bf16Rows{pairs.data()}, c.packed,
                                  c.bias_arg(), M);
  EXPECT_EQ(std::memcmp(y.data(), from_pairs.data(), y.size() * sizeof(float)), 0);
}

TEST(PackedGemmBf16, MatchesFloat64ReferenceOfBf16RoundedInputs) {
  EXPECT_EQ(roberta::kernels::to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(roberta::kernels::to_bf16(1.00390625f), 0x3F80);  // halfway: to even
  EXPECT_EQ(roberta::kernels::to_bf16(1.01171875f), 0x3F82);  // halfway: to even (up)
  std::mt19937 rng(7);
  std::printf("  AVX512-BF16 instructions: %s, kernel: %s\n",
              roberta::kernels::has_bf16_instructions() ? "yes" : "no", roberta::kernels::bf16_kernel_name());
  // 33-47 and 100 end a 12-row block with each count of rows from 1 to 11 (without bf16
  // instructions the fp32 kernel's blocks run the product), on the smaller shapes; a bias where N + K
  // is odd.
  for (size_t M : {1, 5, 8, 12, 17, 70, 200, 33, 37, 38, 39, 41, 42, 43, 44, 46, 47, 100}) {
    for (size_t N : {3, 32, 45, 768}) {
      for (size_t K : {1, 2, 7, 256, 301, 768, 1030}) {  // 1030: two k passes
        if (M != 70 && M != 200 && M * N * K > 20'000'000) continue;
        Bf16Case c(M, N, K, rng);
        c.use_bias = (N + K) % 2 == 1;
        std::vector<float> y = c.fresh_y();
        roberta::kernels::packed_linear(y.data(), c.ldy(), c.x.data(), c.packed, c.bias_arg(), M);
        EXPECT_LT(c.error(y), 1e-5) << "M=" << M << " N=" << N << " K=" << K;
        // From x rounded beforehand (as the op before does it, in its RowsDone / TilesDone): the same
        // product, so the same bits (without bf16 instructions the two widen x by different passes).
        std::vector<uint32_t> pairs(M * ((K + 1) / 2));
        roberta::kernels::to_bf16_pairs(c.x.data(), M, K, pairs.data());
        std::vector<float> from_pairs = c.fresh_y();
        roberta::kernels::packed_linear(from_pairs.data(), c.ldy(), roberta::kernels::Bf16Rows{pairs.data()}, c.packed,
                                        c.bias_arg(), M);
        EXPECT_LT(c.error(from_pairs), 1e-5) << "pairs, M=" << M << " N=" << N << " K=" << K;
        EXPECT_EQ(from_pairs, y) << "M=" << M << " N=" << N << " K=" << K;
      }
    }
  }
}

}  // namespace

namespace {

// The quantizer: per row, scale = max |x| / 127 and every value within half a step of x.
TEST(PackedGemmInt8, QuantizesEachRowSymmetricallyToWithinHalfAStep) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (size_t K : {1, 3, 4, 17, 100, 768}) {  // 100: the 64-wide, 16-wide and scalar loops
    const size_t rows = 9, Q = (K + 3) / 4;
    std::vector<float> x(rows * K), scale(rows);
    for (auto& v : x) v = dist(rng);
    std::fill_n(x.begin() + 2 * K, K, 0.0f);  // an all-zero row
    std::vector<uint32_t> quads(rows * Q);
    roberta::kernels::quantize_rows(x.data(), rows, K, quads.data(), scale.data());
    for (size_t m = 0; m < rows; ++m) {
      float amax = 0;
      for (size_t k = 0; k < K; ++k) amax = std::max(amax, std::abs(x[m * K + k]));
      if (amax > 0) {
        EXPECT_FLOAT_EQ(scale[m], amax / 127.0f);
      }
      const auto* bytes = reinterpret_cast<const uint8_t*>(quads.data() + m * Q);
      for (size_t k = 0; k < Q * 4; ++k) {
        const int q = static_cast<int>(bytes[k]) - 128;
        ASSERT_LE(std::abs(q), 127);
        if (k >= K) {
          EXPECT_EQ(q, 0) << "padding";
          continue;
        }
        EXPECT_LE(std::abs(q * scale[m] - x[m * K + k]), 0.5001f * scale[m]) << "row " << m << " k " << k;
      }
    }
  }
}

// Rows whose largest |x| is below 3.7e-37 (127 / max past FLT_MAX): every byte within ±127 of the
// offset, a zero stays 0, a value keeps its sign, and q · scale is at most the row's max; before,
// 0 · inf made a NaN there and the byte -128. In the vector loops and the tails (k = 100).
TEST(PackedGemmInt8, TinyRowsQuantizeWithinRange) {
  const size_t K = 100, Q = (K + 3) / 4;
  const float tiny[] = {1e-38f, 3e-37f, 1e-45f};  // (the last: the smallest denormal)
  std::vector<float> x(std::size(tiny) * K), scale(std::size(tiny));
  for (size_t m = 0; m < std::size(tiny); ++m)
    for (size_t k = 0; k < K; ++k) x[m * K + k] = k % 3 == 0 ? 0.0f : (k % 3 == 1 ? tiny[m] : -tiny[m] / 2);
  std::vector<uint32_t> quads(std::size(tiny) * Q);
  roberta::kernels::quantize_rows(x.data(), std::size(tiny), K, quads.data(), scale.data());
  for (size_t m = 0; m < std::size(tiny); ++m) {
    ASSERT_TRUE(std::isfinite(scale[m])) << m;
    const auto* bytes = reinterpret_cast<const uint8_t*>(quads.data() + m * Q);
    for (size_t k = 0; k < K; ++k) {
      const int q = static_cast<int>(bytes[k]) - 128;
      const float v = x[m * K + k];
      ASSERT_LE(std::abs(q), 127) << m << "," << k;
      if (v == 0) {
        ASSERT_EQ(q, 0) << m << "," << k;
      } else {
        ASSERT_TRUE(q == 0 || (q > 0) == (v > 0)) << m << "," << k << ": " << q;
      }
      ASSERT_LE(std::abs(q * static_cast<double>(scale[m])), tiny[m] * 1.0001) << m << "," << k;
    }
  }
}

// The int8 product against a float64 reference of its quantized inputs: the weight as
// PackedWeightInt8 rounded it, x as quantize_rows rounds it.
TEST(PackedGemmInt8, MatchesFloat64ReferenceOfQuantizedInputs) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::printf("  AVX512-VNNI instructions: %s\n", roberta::kernels::has_vnni_instructions() ? "yes" : "no");
  // Every remainder of the kernels' row blocks (3, 4, 6 rows); odd M with a bias, even M without.
  for (size_t M : {1, 3, 5, 9, 12, 13, 70, 200}) {
    // 100: a whole 64-column panel, then a ragged one; 40: 32 columns, then 8 (a half of 16)
    for (size_t N : {3, 32, 40, 45, 100, 768}) {
      for (size_t K : {1, 3, 4, 256, 301, 1030, 3072, 3100}) {  // 3100: two k passes
        if (M * N * K > 30'000'000) continue;
        std::vector<float> x(M * K), w(N * K), bias(N);
        for (auto& v : x) v = dist(rng);
        for (auto& v : w) v = dist(rng);
        for (auto& v : bias) v = dist(rng);
        const roberta::kernels::PackedWeightInt8 packed(w.data(), N, K);
        const size_t Q = packed.k_quads();
        std::vector<uint32_t> quads(M * Q);
        std::vector<float> xs(M);
        roberta::kernels::quantize_rows(x.data(), M, K, quads.data(), xs.data());
        const size_t ldy = N + 3;
        std::vector<float> y(M * ldy, -7.0f);
        const float* b = M % 2 ? bias.data() : nullptr;
        roberta::kernels::packed_linear(y.data(), ldy, x.data(), packed, b, M);
        // the same product from x quantized beforehand (as a previous product's rows_done does)
        std::vector<float> yq(M * ldy, -7.0f);
        roberta::kernels::packed_linear(yq.data(), ldy, roberta::kernels::QuantizedRows{quads.data(), xs.data()},
                                        packed, b, M);
        double max_err = 0, max_err_q = 0;
        for (size_t m = 0; m < M; ++m) {
          const auto* bytes = reinterpret_cast<const uint8_t*>(quads.data() + m * Q);
          for (size_t n = 0; n < N; ++n) {
            double want = b ? b[n] : 0.0;
            for (size_t k = 0; k < K; ++k)
              want += (static_cast<double>(bytes[k]) - 128.0) * xs[m] * packed.dequantized(n, k);
            max_err = std::max(max_err, std::abs(want - y[m * ldy + n]) / (1.0 + std::abs(want)));
            max_err_q = std::max(max_err_q, std::abs(want - yq[m * ldy + n]) / (1.0 + std::abs(want)));
          }
          for (size_t n = N; n < ldy; ++n) ASSERT_EQ(y[m * ldy + n], -7.0f) << "wrote past N";
          for (size_t n = N; n < ldy; ++n) ASSERT_EQ(yq[m * ldy + n], -7.0f) << "wrote past N";
        }
        EXPECT_LT(max_err, 1e-5) << "M=" << M << " N=" << N << " K=" << K;
        EXPECT_LT(max_err_q, 1e-5) << "quantized input, M=" << M << " N=" << N << " K=" << K;
      }
    }
  }
}

// Bytes at the ends of both ranges: x's q = ±127 (stored as 1 and 255) times weights of ±127, the
// largest products the kernels see. Each pair of them summed into 16 bits as vpmaddubsw does with
// the stored unsigned byte (2 · 255 · 127 = 64770) would saturate at 32767; the AVX2 kernel's
// signed bytes give at most 2 · 127 · 127 = 32258. Every x and weight value is ± a constant of its
// row, so each quantizes to ±127 exactly and the float64 product of the values is the answer.
TEST(PackedGemmInt8, ExtremeBytesDoNotSaturate) {
  const size_t M = 7, N = 128, K = 771;
  std::vector<float> x(M * K), w(N * K);
  for (size_t m = 0; m < M; ++m)
    for (size_t k = 0; k < K; ++k) x[m * K + k] = (m % 2 ? -2.5f : 2.5f) * ((m / 2 + k) % 3 ? 1.0f : -1.0f);
  for (size_t n = 0; n < N; ++n)
    for (size_t k = 0; k < K; ++k) w[n * K + k] = (n % 3 ? 0.75f : -0.75f) * ((n / 3 + k) % 5 ? 1.0f : -1.0f);
  const roberta::kernels::PackedWeightInt8 packed(w.data(), N, K);
  std::vector<float> y(M * N);
  roberta::kernels::packed_linear(y.data(), N, x.data(), packed, nullptr, M);
  std::printf("  int8 kernel: %s\n", roberta::kernels::int8_kernel_name());
  for (size_t m = 0; m < M; ++m)
    for (size_t n = 0; n < N; ++n) {
      double want = 0;  // x and w dequantized: ±127 · (2.5 / 127) and ±127 · (0.75 / 127)
      for (size_t k = 0; k < K; ++k) want += static_cast<double>(x[m * K + k]) * w[n * K + k];
      ASSERT_NEAR(y[m * N + n], want, 1e-5 * K) << m << "," << n;
    }
}

// The AMX kernels (kernels/amx_gemm.h). Their tile instructions are emulated in C++ on every
// CPU with AVX-512 (the epilogue's), so the 32 x 32 tile blocking, the edges (rows past a 16-row
// tile, k not a multiple of 16 quads or pairs, columns past N) and the epilogues are checked here
// against a float64 reference; where the CPU has AMX, the hardware tiles must give the emulation's
// int8 results exactly and bf16 results within fp32 rounding of the reference.
bool emulation_runs_here() { return roberta::kernels::detected_isa() >= roberta::kernels::Isa::kAvx512; }
bool amx_here() { return roberta::kernels::usable_isa() >= roberta::kernels::Isa::kAmx; }

// y (M, N + 3) of the int8 product of x quantized, with bias; the columns past N stay -7.
struct Int8Case {
  size_t M, N, K;
  std::vector<float> w, bias, xs, y;
  std::vector<uint32_t> quads;
  roberta::kernels::PackedWeightInt8 packed;
  Int8Case(size_t m, size_t n, size_t k, std::mt19937& rng) : M(m), N(n), K(k) {
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> x(M * K);
    w.resize(N * K), bias.resize(N);
    for (auto& v : x) v = dist(rng);
    for (auto& v : w) v = dist(rng);
    for (auto& v : bias) v = dist(rng);
    packed = roberta::kernels::PackedWeightInt8(w.data(), N, K);
    quads.resize(M * packed.k_quads()), xs.resize(M);
    roberta::kernels::quantize_rows(x.data(), M, K, quads.data(), xs.data());
  }
  roberta::kernels::QuantizedRows rows() const { return {quads.data(), xs.data()}; }
  size_t ldy() const { return N + 3; }
  // max |reference - y| / (1 + |reference|), after checking nothing was written past N.
  double error(const std::vector<float>& y) const {
    double worst = 0;
    const size_t Q = packed.k_quads();
    for (size_t m = 0; m < M; ++m) {
      const auto* bytes = reinterpret_cast<const uint8_t*>(quads.data() + m * Q);
      for (size_t n = 0; n < N; ++n) {
        double want = bias[n];
        for (size_t k = 0; k < K; ++k) want += (static_cast<double>(bytes[k]) - 128.0) * xs[m] * packed.dequantized(n, k);
        worst = std::max(worst, std::abs(want - y[m * ldy() + n]) / (1.0 + std::abs(want)));
      }
      for (size_t n = N; n < ldy(); ++n)
        if (y[m * ldy() + n] != -7.0f) return 1e30;  // wrote past N
    }
    return worst;
  }
};

const std::vector<std::array<size_t, 3>> kAmxShapes = {
    // M: within one 16-row tile, one row past it, two tiles, a 32-row block plus a tail; N: a
    // partial column tile, a whole int8 panel, several panels with a partial one; K: under one
    // 16-quad step, a partial last step, exact steps, two k slices (3100 > 3072) with a partial
    // step in the second.
    {1, 3, 1},   {15, 64, 4},   {16, 64, 63},   {17, 100, 64},  {33, 200, 100},
    {47, 45, 256}, {70, 130, 301}, {5, 64, 3100}, {40, 70, 3100}};

TEST(PackedGemmInt8, AmxEmulationMatchesFloat64ReferenceOfQuantizedInputs) {
  if (!emulation_runs_here()) GTEST_SKIP() << "the emulation's epilogue needs AVX-512";
  std::mt19937 rng(21);
  for (const auto& [M, N, K] : kAmxShapes) {
    Int8Case c(M, N, K, rng);
    std::vector<float> y(M * c.ldy(), -7.0f);
    roberta::kernels::packed_linear_amx_emulated(y.data(), c.ldy(), c.rows(), c.packed, c.bias.data(), M);
    EXPECT_LT(c.error(y), 1e-5) << "M=" << M << " N=" << N << " K=" << K;
  }
}

TEST(PackedGemmInt8, AmxTilesGiveTheirEmulationsResultsWhereTheCpuHasThem) {
  if (!amx_here()) GTEST_SKIP() << "no AMX tiles here (or ROBERTA_ISA below amx): the AMX kernel stays untested";
  EXPECT_STREQ(roberta::kernels::int8_kernel_name(), "AMX-INT8");
  std::mt19937 rng(22);
  for (const auto& [M, N, K] : kAmxShapes) {
    Int8Case c(M, N, K, rng);
    std::vector<float> tiles(M * c.ldy(), -7.0f), emulated(M * c.ldy(), -7.0f);
    roberta::kernels::packed_linear(tiles.data(), c.ldy(), c.rows(), c.packed, c.bias.data(), M);
    roberta::kernels::packed_linear_amx_emulated(emulated.data(), c.ldy(), c.rows(), c.packed, c.bias.data(), M);
    EXPECT_EQ(tiles, emulated) << "M=" << M << " N=" << N << " K=" << K;
    EXPECT_LT(c.error(tiles), 1e-5) << "M=" << M << " N=" << N << " K=" << K;
  }
}

TEST(PackedGemmBf16, AmxMatchesFloat64ReferenceOfBf16RoundedInputs) {
  if (!emulation_runs_here()) GTEST_SKIP() << "the emulation's epilogue needs AVX-512";
  std::mt19937 rng(23);
  // K 1030: over the AVX-512 kernels' k slice (512 pairs), which the AMX product takes in one pass,
  // ending inside a 16-pair step.
  for (auto [M, N, K] : kAmxShapes) {
    if (K == 3100) K = 1030;
    const Bf16Case c(M, N, K, rng);
    std::vector<float> emulated = c.fresh_y();
    roberta::kernels::packed_linear_amx_emulated(emulated.data(), c.ldy(), c.x.data(), c.packed, c.bias.data(), M);
    EXPECT_LT(c.error(emulated), 1e-5) << "emulated, M=" << M << " N=" << N << " K=" << K;
    if (amx_here()) {
      EXPECT_STREQ(roberta::kernels::bf16_kernel_name(), "AMX-BF16");
      std::vector<float> tiles = c.fresh_y();
      roberta::kernels::packed_linear(tiles.data(), c.ldy(), c.x.data(), c.packed, c.bias.data(), M);
      EXPECT_LT(c.error(tiles), 1e-5) << "AMX tiles, M=" << M << " N=" << N << " K=" << K;
    }
  }
  if (!amx_here()) std::printf("  no AMX tiles here (or ROBERTA_ISA below amx): only the emulation ran\n");
}

// The AMX products apply GELU in their epilogue, on the last k slice only: the same values as the
// product followed by the separate activation pass, bit for bit, for int8 and bf16, through the
// emulation everywhere and on the tiles where the CPU has them (int8's K = 3100 goes in two k
// slices: GELU after the first would differ; bf16's products on AMX take all of k in one pass).
TEST(PackedGemm, AmxFusedGeluEqualsSeparatePass) {
  if (!emulation_runs_here()) GTEST_SKIP() << "the emulation's epilogue needs AVX-512";
  if (roberta::kernels::usable_isa() < roberta::kernels::Isa::kAvx512)
    GTEST_SKIP() << "ROBERTA_ISA below avx512: the separate pass runs the portable GELU, the epilogue AVX-512's";
  using roberta::kernels::Activation;
  std::mt19937 rng(24);
  const auto expect_fused_equals_separate = [](std::vector<float> plain, const std::vector<float>& fused, size_t M,
                                               size_t N, size_t ldy, const char* what) {
    roberta::kernels::activation_rows(plain.data(), ldy, M, N, Activation::kGelu);
    EXPECT_EQ(fused, plain) << what << " M=" << M << " N=" << N;  // (columns past N: -7 in both)
  };
  for (const auto& [M, N, K] : kAmxShapes) {
    Int8Case c(M, N, K, rng);
    std::vector<float> plain(M * c.ldy(), -7.0f), fused(M * c.ldy(), -7.0f);
    roberta::kernels::packed_linear_amx_emulated(plain.data(), c.ldy(), c.rows(), c.packed, c.bias.data(), M);
    roberta::kernels::packed_linear_amx_emulated(fused.data(), c.ldy(), c.rows(), c.packed, c.bias.data(), M,
                                                 Activation::kGelu);
    expect_fused_equals_separate(plain, fused, M, N, c.ldy(), "int8, emulated");
    if (amx_here()) {
      std::vector<float> tiles(M * c.ldy(), -7.0f);
      roberta::kernels::packed_linear(tiles.data(), c.ldy(), c.rows(), c.packed, c.bias.data(), M, Activation::kGelu);
      expect_fused_equals_separate(plain, tiles, M, N, c.ldy(), "int8, AMX tiles");
    }
    const Bf16Case b(M, N, K == 3100 ? 1030 : K, rng);
    std::vector<float> plain_bf16 = b.fresh_y(), fused_bf16 = b.fresh_y();
    roberta::kernels::packed_linear_amx_emulated(plain_bf16.data(), b.ldy(), b.x.data(), b.packed, b.bias.data(), M);
    roberta::kernels::packed_linear_amx_emulated(fused_bf16.data(), b.ldy(), b.x.data(), b.packed, b.bias.data(), M,
                                                 Activation::kGelu);
    expect_fused_equals_separate(plain_bf16, fused_bf16, M, N, b.ldy(), "bf16, emulated");
    if (amx_here()) {
      std::vector<float> tiles = b.fresh_y(), tiles_plain = b.fresh_y();
      roberta::kernels::packed_linear(tiles_plain.data(), b.ldy(), b.x.data(), b.packed, b.bias.data(), M);
      roberta::kernels::packed_linear(tiles.data(), b.ldy(), b.x.data(), b.packed, b.bias.data(), M, Activation::kGelu);
      expect_fused_equals_separate(tiles_plain, tiles, M, N, b.ldy(), "bf16, AMX tiles");
    }
  }
  if (!amx_here()) std::printf("  no AMX tiles here (or ROBERTA_ISA below amx): only the emulation ran\n");
}

// The bf16 product written as bf16 by the AMX epilogue (for act(intermediate), whose only reader
// takes bf16): the same pairs, bit for bit, as the fp32 product with the activation followed by
// to_bf16_pairs, through the emulation on any CPU with AVX512-BF16 and on the tiles where the CPU
// has them; and a clear error for what it does not do (odd N, K over one pass, another activation).
// A bf16 output written in column groups of 64 (ColumnGroups{64, stride}, row stride ldp pairs)
// holds the ungrouped output's pairs (want: (M, ldw) pairs), each where it belongs, and nothing
// else: every other pair keeps its 0xDEADBEEF.
void expect_grouped_like(const std::vector<uint32_t>& grouped, const std::vector<uint32_t>& want, size_t M, size_t N,
                         size_t ldw, size_t ldp, size_t stride, const char* what) {
  std::vector<uint32_t> expected(grouped.size(), 0xDEADBEEF);
  for (size_t m = 0; m < M; ++m)
    for (size_t c = 0; c < N; c += 2)
      expected.at((c / 64) * stride + m * ldp + (c % 64) / 2) = want[m * ldw + c / 2];
  EXPECT_EQ(grouped, expected) << what << ", M=" << M << " N=" << N;
}
constexpr size_t kGroupLdp = 33;  // pairs per row in a group: 32 and one left alone
// The AMX shapes and one of three groups of 64 columns.
std::vector<std::array<size_t, 3>> with_groups_shape(std::vector<std::array<size_t, 3>> shapes) {
  shapes.push_back({33, 192, 100});
  return shapes;
}

// product(out, groups), a bf16-output product (bf16 or int8 weight), writes into N / 64 groups of
// 64 columns, each followed by a gap of 5 pairs; checked against its ungrouped output `want` by
// expect_grouped_like. (Shapes whose N is not a multiple of 64 are left out.)
template <class Product>
void check_column_groups_output(const Product& product, const std::vector<uint32_t>& want, size_t M, size_t N,
                                size_t ldw, const char* what) {
  if (N % 64 != 0) return;
  const size_t stride = M * kGroupLdp + 5;
  std::vector<uint32_t> grouped((N / 64) * stride, 0xDEADBEEF);
  product(grouped.data(), roberta::kernels::ColumnGroups{64, stride});
  expect_grouped_like(grouped, want, M, N, ldw, kGroupLdp, stride, what);
}

TEST(PackedGemmBf16, AmxBf16OutputEqualsRoundingTheFp32Product) {
  if (!roberta::kernels::has_bf16_instructions()) GTEST_SKIP() << "the bf16 rounding needs AVX512-BF16";
  using roberta::kernels::Activation;
  std::mt19937 rng(25);
  for (auto [M, N, K] : with_groups_shape(kAmxShapes)) {
    N += N % 2;
    if (K > 1024) K = 1024;
    const Bf16Case c(M, N, K, rng);
    const size_t Q = c.packed.k_pairs(), ldp = N / 2 + 3;
    std::vector<uint32_t> xp(M * Q);
    roberta::kernels::to_bf16_pairs(c.x.data(), M, K, xp.data());
    for (const Activation act : {Activation::kLinear, Activation::kGelu}) {
      std::vector<float> y(M * N);
      roberta::kernels::packed_linear_amx_emulated(y.data(), N, c.x.data(), c.packed, c.bias.data(), M, act);
      std::vector<uint32_t> want(M * ldp, 0xDEADBEEF), emulated(M * ldp, 0xDEADBEEF);
      roberta::kernels::to_bf16_pairs(y.data(), N, M, N, want.data(), ldp);
      roberta::kernels::packed_linear_to_bf16_amx_emulated(emulated.data(), ldp, {xp.data()}, c.packed, c.bias.data(),
                                                           M, act);
      EXPECT_EQ(emulated, want) << "emulated, M=" << M << " N=" << N << " K=" << K;  // (past N/2: untouched)
      check_column_groups_output(
          [&](uint32_t* out, const roberta::kernels::ColumnGroups& g) {
            roberta::kernels::packed_linear_to_bf16_amx_emulated(out, kGroupLdp, {xp.data()}, c.packed, c.bias.data(),
                                                                 M, act, g);
          },
          want, M, N, ldp, "emulated, in groups");
      if (amx_here()) {
        ASSERT_TRUE(roberta::kernels::writes_bf16_output(c.packed, act));
        std::vector<float> y_tiles(M * N);
        roberta::kernels::packed_linear(y_tiles.data(), N, roberta::kernels::Bf16Rows{xp.data()}, c.packed,
                                        c.bias.data(), M, act);
        std::vector<uint32_t> want_tiles(M * ldp, 0xDEADBEEF), tiles(M * ldp, 0xDEADBEEF);
        roberta::kernels::to_bf16_pairs(y_tiles.data(), N, M, N, want_tiles.data(), ldp);
        roberta::kernels::packed_linear_to_bf16(tiles.data(), ldp, {xp.data()}, c.packed, c.bias.data(), M, act);
        EXPECT_EQ(tiles, want_tiles) << "AMX tiles, M=" << M << " N=" << N << " K=" << K;
        check_column_groups_output(
            [&](uint32_t* out, const roberta::kernels::ColumnGroups& g) {
              roberta::kernels::packed_linear_to_bf16(out, kGroupLdp, {xp.data()}, c.packed, c.bias.data(), M, act, g);
            },
            want_tiles, M, N, ldp, "AMX tiles, in groups");
      }
    }
  }
  std::mt19937 rng2(26);
  const Bf16Case odd(20, 33, 64, rng2), deep(20, 64, 1030, rng2), even(20, 64, 64, rng2);
  std::vector<uint32_t> xp(20 * 515), out(20 * 40);
  const std::pair<const roberta::kernels::PackedWeightBf16*, Activation> refused[] = {
      {&odd.packed, Activation::kGelu}, {&deep.packed, Activation::kGelu}, {&even.packed, Activation::kRelu}};
  for (const auto& [packed, act] : refused) {  // odd N, K past one pass, an activation other than GELU
    EXPECT_FALSE(roberta::kernels::writes_bf16_output(*packed, act));
    EXPECT_THROW(roberta::kernels::packed_linear_to_bf16(out.data(), 20, {xp.data()}, *packed, nullptr, 20, act),
                 roberta::Error);
  }
  if (!amx_here()) std::printf("  no AMX tiles here (or ROBERTA_ISA below amx): only the emulation ran\n");
}

// The int8 product's bf16 output (the encoder's act(intermediate), AMX only): the fp32 product's
// values (checked against float64 above) rounded as to_bf16_pairs rounds them, bit for bit.
TEST(PackedGemmInt8, AmxBf16OutputEqualsRoundingTheFp32Product) {
  if (!roberta::kernels::has_bf16_instructions()) GTEST_SKIP() << "the bf16 rounding needs AVX512-BF16";
  using roberta::kernels::Activation;
  std::mt19937 rng(27);
  for (auto [M, N, K] : with_groups_shape(kAmxShapes)) {
    N += N % 2;
    if (K > 3072) K = 3072;  // (one k slice)
    const Int8Case c(M, N, K, rng);
    const size_t ldp = N / 2 + 3;
    for (const Activation act : {Activation::kLinear, Activation::kGelu}) {
      std::vector<float> y(M * N);
      roberta::kernels::packed_linear_amx_emulated(y.data(), N, c.rows(), c.packed, c.bias.data(), M, act);
      std::vector<uint32_t> want(M * ldp, 0xDEADBEEF), emulated(M * ldp, 0xDEADBEEF);
      roberta::kernels::to_bf16_pairs(y.data(), N, M, N, want.data(), ldp);
      roberta::kernels::packed_linear_to_bf16_amx_emulated(emulated.data(), ldp, c.rows(), c.packed, c.bias.data(), M,
                                                           act);
      EXPECT_EQ(emulated, want) << "emulated, M=" << M << " N=" << N << " K=" << K;  // (past N/2: untouched)
      check_column_groups_output(
          [&](uint32_t* out, const roberta::kernels::ColumnGroups& g) {
            roberta::kernels::packed_linear_to_bf16_amx_emulated(out, kGroupLdp, c.rows(), c.packed, c.bias.data(), M,
                                                                 act, g);
          },
          want, M, N, ldp, "emulated, in groups");
      // This CPU's own product where it writes bf16: on AMX tiles, or AVX512-VNNI's with the fused
      // epilogue (runtime/cpu.h). Its GELU, applied in registers, is the activation's own pass.
      const bool native = roberta::kernels::writes_bf16_output(c.packed, act);
      if (amx_here()) {
        ASSERT_TRUE(native);
      }
      if (native) {
        std::vector<float> y_here(M * N);
        roberta::kernels::packed_linear(y_here.data(), N, c.rows(), c.packed, c.bias.data(), M);
        roberta::kernels::activation_rows(y_here.data(), N, M, N, act);
        std::vector<uint32_t> want_here(M * ldp, 0xDEADBEEF), here(M * ldp, 0xDEADBEEF);
        roberta::kernels::to_bf16_pairs(y_here.data(), N, M, N, want_here.data(), ldp);
        roberta::kernels::packed_linear_to_bf16(here.data(), ldp, c.rows(), c.packed, c.bias.data(), M, act);
        EXPECT_EQ(here, want_here) << roberta::kernels::int8_kernel_name() << ", M=" << M << " N=" << N << " K=" << K;
        std::vector<float> fused(M * N);
        roberta::kernels::packed_linear(fused.data(), N, c.rows(), c.packed, c.bias.data(), M, act);
        EXPECT_EQ(fused, y_here) << "fp32 output, M=" << M << " N=" << N << " K=" << K;
        check_column_groups_output(
            [&](uint32_t* out, const roberta::kernels::ColumnGroups& g) {
              roberta::kernels::packed_linear_to_bf16(out, kGroupLdp, c.rows(), c.packed, c.bias.data(), M, act, g);
            },
            want_here, M, N, ldp, "this CPU's product, in groups");
      }
    }
  }
  std::mt19937 rng2(28);
  const Int8Case odd(20, 33, 64, rng2), deep(20, 64, 3100, rng2), even(20, 64, 64, rng2);
  std::vector<uint32_t> out(20 * 40);
  const std::pair<const Int8Case*, Activation> refused[] = {
      {&odd, Activation::kGelu}, {&deep, Activation::kGelu}, {&even, Activation::kRelu}};
  for (const auto& [c, act] : refused) {  // odd N, K past one pass, an activation other than GELU
    EXPECT_FALSE(roberta::kernels::writes_bf16_output(c->packed, act));
    EXPECT_THROW(roberta::kernels::packed_linear_to_bf16(out.data(), 20, c->rows(), c->packed, nullptr, 20, act),
                 roberta::Error);
  }
  for (const roberta::kernels::ColumnGroups g : {roberta::kernels::ColumnGroups{32, 640}, {128, 1280}})
    EXPECT_THROW(roberta::kernels::packed_linear_to_bf16_amx_emulated(out.data(), 20, even.rows(), even.packed, nullptr,
                                                                      20, Activation::kGelu, g),
                 roberta::Error)  // groups not a multiple of 64, or not dividing N = 64
        << g.width;
  if (!roberta::kernels::writes_bf16_output(even.packed, Activation::kGelu))
    std::printf("  this CPU's int8 product does not write bf16 (%s): only the emulation ran\n",
                roberta::kernels::int8_kernel_name());
}

// quantize_bf16_rows quantizes bf16 rows as quantize_rows quantizes the same values in fp32 (its
// own check is QuantizesEachRowSymmetricallyToWithinHalfAStep): the same bytes and scales.
TEST(PackedGemmInt8, QuantizesBf16RowsAsTheirFp32Values) {
  std::mt19937 rng(29);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (size_t K : {1, 2, 3, 31, 32, 33, 100, 768, 3072}) {
    const size_t rows = 9, Q = (K + 3) / 4, ldp = (K + 1) / 2 + 5;
    std::vector<uint16_t> bf16(rows * ldp * 2, 0xFFFF);  // (0xFFFF, a NaN, past each row)
    std::vector<float> widened(rows * K);
    for (size_t m = 0; m < rows; ++m)
      for (size_t k = 0; k < K; ++k) {
        float v = m == 2 ? 0.0f : dist(rng);  // (row 2 all zero)
        if (m == 3 && k == K / 2) v = -50.0f;  // the largest |value| negative
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        const uint16_t h = static_cast<uint16_t>(bits >> 16);  // (truncated: any bf16 value will do)
        bf16[m * ldp * 2 + k] = h;
        bits = uint32_t{h} << 16;
        std::memcpy(&widened[m * K + k], &bits, 4);
      }
    std::vector<uint32_t> want(rows * Q), got(rows * Q);
    std::vector<float> want_scale(rows), got_scale(rows);
    roberta::kernels::quantize_rows(widened.data(), rows, K, want.data(), want_scale.data());
    roberta::kernels::quantize_bf16_rows(reinterpret_cast<const uint32_t*>(bf16.data()), ldp, rows, K, got.data(),
                                         got_scale.data());
    EXPECT_EQ(got, want) << "K=" << K;
    EXPECT_EQ(got_scale, want_scale) << "K=" << K;
  }
}

// Non-finite values in int8 products. A row of x or of the weight holding an infinity or a NaN
// (in a vector loop or a scalar tail; a signalling NaN and a negative one too) gives NaN at every
// output the float64 product of the unquantized values makes not finite, and every other output is
// the float64 reference of the quantized inputs: x quantized on the fly, beforehand (from fp32 and
// from bf16 pairs), through the AMX kernel emulated, and with GELU and bf16 output on AMX tiles.
TEST(PackedGemmInt8, NonFiniteRowsGiveNaNWhereFp32IsNotFinite) {
  const size_t M = 13, N = 100, K = 301, Q = (K + 3) / 4;
  std::mt19937 rng(31);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(M * K), w(N * K), bias(N);
  for (auto& v : x) v = dist(rng);
  for (auto& v : w) v = dist(rng);
  for (auto& v : bias) v = dist(rng);
  const std::pair<size_t, uint32_t> x_specials[] = {  // row, k of x: (row, bits)
      {1, 0x7F800000}, {4, 0xFF800000}, {7, 0x7FC00000}, {10, 0xFFC00000}, {12, 0x7F800001}};
  const size_t x_at[] = {0, 150, 300, 63, 17};  // the first value, the middle, the last, a vector's end
  for (size_t i = 0; i < std::size(x_specials); ++i)
    x[x_specials[i].first * K + x_at[i]] = std::bit_cast<float>(x_specials[i].second);
  w[3 * K + 300] = std::numeric_limits<float>::quiet_NaN();  // in the first panel's tail; the second panel
  w[64 * K + 5] = -std::numeric_limits<float>::infinity();   // (64-99, ragged) twice
  w[99 * K + 160] = std::numeric_limits<float>::infinity();
  const roberta::kernels::PackedWeightInt8 packed(w.data(), N, K);
  std::vector<bool> not_finite(M * N);
  size_t count = 0;
  for (size_t m = 0; m < M; ++m)
    for (size_t n = 0; n < N; ++n) {
      double sum = bias[n];
      for (size_t k = 0; k < K; ++k) sum += static_cast<double>(x[m * K + k]) * w[n * K + k];
      count += not_finite[m * N + n] = !std::isfinite(sum);
    }
  ASSERT_EQ(count, 5 * N + 3 * (M - 5));  // (the five rows, and the three columns in the others)
  // y against the reference of quantized inputs (quads, scales); f(y[m * N + n]) gives a float.
  const auto check = [&](const std::vector<uint32_t>& quads, const std::vector<float>& xs, auto f, const char* what) {
    for (size_t m = 0; m < M; ++m) {
      const auto* bytes = reinterpret_cast<const uint8_t*>(quads.data() + m * Q);
      for (size_t n = 0; n < N; ++n) {
        const float got = f(m * N + n);
        if (not_finite[m * N + n]) {
          ASSERT_TRUE(std::isnan(got)) << what << ": " << m << "," << n << " = " << got;
          continue;
        }
        double want = bias[n];
        for (size_t k = 0; k < K; ++k)
          want += (static_cast<double>(bytes[k]) - 128.0) * xs[m] * packed.dequantized(n, k);
        ASSERT_LT(std::abs(want - got) / (1.0 + std::abs(want)), 1e-5) << what << ": " << m << "," << n;
      }
    }
  };
  std::vector<uint32_t> quads(M * Q);
  std::vector<float> xs(M), y(M * N);
  roberta::kernels::quantize_rows(x.data(), M, K, quads.data(), xs.data());
  const auto at_y = [&](size_t i) { return y[i]; };
  roberta::kernels::packed_linear(y.data(), N, x.data(), packed, bias.data(), M);
  check(quads, xs, at_y, "x quantized on the fly");
  std::fill(y.begin(), y.end(), 0.0f);
  roberta::kernels::packed_linear(y.data(), N, roberta::kernels::QuantizedRows{quads.data(), xs.data()}, packed,
                                  bias.data(), M);
  check(quads, xs, at_y, "x quantized beforehand");
  if (emulation_runs_here()) {
    std::fill(y.begin(), y.end(), 0.0f);
    roberta::kernels::packed_linear_amx_emulated(y.data(), N, {quads.data(), xs.data()}, packed, bias.data(), M);
    check(quads, xs, at_y, "AMX emulated");
  }
  std::vector<uint32_t> pairs(M * ((K + 1) / 2)), pair_quads(M * Q);
  std::vector<float> pair_scales(M);
  roberta::kernels::to_bf16_pairs(x.data(), M, K, pairs.data());
  roberta::kernels::quantize_bf16_rows(pairs.data(), (K + 1) / 2, M, K, pair_quads.data(), pair_scales.data());
  std::fill(y.begin(), y.end(), 0.0f);
  roberta::kernels::packed_linear(y.data(), N, roberta::kernels::QuantizedRows{pair_quads.data(), pair_scales.data()},
                                  packed, bias.data(), M);
  check(pair_quads, pair_scales, at_y, "from bf16 pairs");
  if (roberta::kernels::writes_bf16_output(packed, roberta::kernels::Activation::kGelu)) {
    // GELU(NaN) is NaN; the finite outputs are checked by AmxBf16OutputEqualsRoundingTheFp32Product
    std::vector<uint32_t> out(M * N / 2);
    roberta::kernels::packed_linear_to_bf16(out.data(), N / 2, {quads.data(), xs.data()}, packed, bias.data(), M,
                                            roberta::kernels::Activation::kGelu);
    const auto* h = reinterpret_cast<const uint16_t*>(out.data());
    for (size_t i = 0; i < M * N; ++i)
      ASSERT_EQ((h[i] & 0x7FFF) > 0x7F80, not_finite[i]) << "bf16 GELU output " << i / N << "," << i % N;
  }
}

// tiles_done and rows_done see each element / row of y once, final, on every kernel, from fp32 x
// and from x converted beforehand (rows_done_check.h).
TEST(PackedGemm, RowsDoneAndTilesDoneSeeFinalValuesOnce) {
  std::mt19937 rng(12);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const size_t N = 768, K = 300;
  std::vector<float> w(N * K);
  for (auto& v : w) v = dist(rng);
  const auto apply = [](auto&&... args) { roberta::kernels::packed_linear(args...); };
  expect_rows_done_sees_final_rows(roberta::kernels::PackedWeight(w.data(), N, K), N, K, apply);
  expect_rows_done_sees_final_rows(roberta::kernels::PackedWeightBf16(w.data(), N, K), N, K, apply);
  expect_rows_done_sees_final_rows(roberta::kernels::PackedWeightInt8(w.data(), N, K), N, K, apply);
  const auto from_pairs = [K](float* y, size_t ldy, const float* x, const auto& packed, const float* bias, size_t M,
                              auto act, auto rows_done, auto tiles_done) {
    std::vector<uint32_t> pairs(M * ((K + 1) / 2));
    roberta::kernels::to_bf16_pairs(x, M, K, pairs.data());
    roberta::kernels::packed_linear(y, ldy, roberta::kernels::Bf16Rows{pairs.data()}, packed, bias, M, act, rows_done,
                                    tiles_done);
  };
  expect_rows_done_sees_final_rows(roberta::kernels::PackedWeightBf16(w.data(), N, K), N, K, from_pairs);
  const auto from_quads = [K](float* y, size_t ldy, const float* x, const auto& packed, const float* bias, size_t M,
                              auto act, auto rows_done, auto tiles_done) {
    std::vector<uint32_t> quads(M * ((K + 3) / 4));
    std::vector<float> scales(M);
    roberta::kernels::quantize_rows(x, M, K, quads.data(), scales.data());
    roberta::kernels::packed_linear(y, ldy, roberta::kernels::QuantizedRows{quads.data(), scales.data()}, packed, bias,
                                    M, act, rows_done, tiles_done);
  };
  expect_rows_done_sees_final_rows(roberta::kernels::PackedWeightInt8(w.data(), N, K), N, K, from_quads);
}

// to_bf16_pairs on a block of a larger matrix (a tile of columns [c0, c0 + k), c0 even): each
// element rounded as to_bf16 (checked against torch's rounding above), k padded with a zero to an
// even count, nothing outside the block written, on every ISA this CPU allows (CTest runs this
// binary capped too).
TEST(PackedGemmBf16, StridedPairsAreEachElementRoundedAndNothingElse) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  const size_t rows = 7, cols = 101, ldp = 60;  // pairs per row of the destination, past (cols + 1) / 2
  std::vector<float> x(rows * cols);
  for (auto& v : x) v = dist(rng);
  for (const auto& [c0, k] : {std::pair<size_t, size_t>{0, 101}, {0, 32}, {32, 45}, {64, 37}, {100, 1}, {2, 16}}) {
    SCOPED_TRACE(::testing::Message() << "c0 " << c0 << " k " << k);
    std::vector<uint32_t> pairs(rows * ldp, 0xDEADBEEFu);
    roberta::kernels::to_bf16_pairs(x.data() + c0, cols, rows, k, pairs.data() + c0 / 2, ldp);
    for (size_t r = 0; r < rows; ++r)
      for (size_t q = 0; q < ldp; ++q) {
        const uint32_t got = pairs[r * ldp + q];
        const size_t i = 2 * q;  // the row's element in the pair's low half
        if (i < c0 || i >= c0 + k) {
          ASSERT_EQ(got, 0xDEADBEEFu) << "wrote outside the block at row " << r << " pair " << q;
          continue;
        }
        const uint32_t lo = roberta::kernels::to_bf16(x[r * cols + i]);
        const uint32_t hi = i + 1 < c0 + k ? roberta::kernels::to_bf16(x[r * cols + i + 1]) : 0;
        ASSERT_EQ(got, lo | hi << 16) << "row " << r << " pair " << q;
      }
  }
}

// to_bf16_row, which rounds the weights at load, is to_bf16 (checked against torch's rounding
// above) bit for bit on every kind of value: zeros, denormals (kept, unlike vcvtneps2bf16), ties
// both ways, values that round up to infinity, infinities, signalling and quiet NaNs of either
// sign; in its vector loop and its scalar tail; nothing written past n.
TEST(PackedGemmBf16, WeightRowRoundingIsToBf16BitForBit) {
  const uint32_t specials[] = {0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00008000, 0x00018000,
                               0x3F808000, 0x3F818000, 0x3F808001, 0xBF818000, 0x7F7FFFFF, 0xFF7FFFFF,
                               0x7F800000, 0xFF800000, 0x7F800001, 0x7FBFFFFF, 0xFFC00000, 0x7FFFFFFF};
  std::mt19937 rng(5);
  for (size_t n : {0, 1, 15, 16, 17, 40, 100, 769}) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i)
      x[i] = std::bit_cast<float>(i % 3 == 0 ? specials[(i / 3) % std::size(specials)] : static_cast<uint32_t>(rng()));
    std::vector<uint16_t> out(n + 1, 0xABCD);
    roberta::kernels::to_bf16_row(x.data(), n, out.data());
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], roberta::kernels::to_bf16(x[i]))
          << "n " << n << " at " << i << ": bits 0x" << std::hex << std::bit_cast<uint32_t>(x[i]);
    EXPECT_EQ(out[n], 0xABCD) << "wrote past n = " << n;
  }
}

// The weights' quantization per output channel, as torch's and ONNX Runtime's symmetric
// per-channel quantizers do it: scale = max |w| / 127, q = w / scale rounded to the nearest
// integer, ties to even (written out here); an all-zero row gets scale 1; a row holding a NaN or an
// infinity gets scale NaN and all zeros (its output channel NaN, as fp32's is not finite). In the
// vector loop and the scalar tail (k = 37 = 2 x 16 + 5), and through PackedWeightInt8's layout.
TEST(PackedGemmInt8, QuantizesWeightRowsToTheNearestStepTiesToEven) {
  const size_t N = 40, K = 37;
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 0.1f);
  std::vector<float> w(N * K);
  for (auto& v : w) v = dist(rng);
  std::fill_n(w.begin(), K, 0.0f);  // row 0: all zero
  // Row 1: its maximum is 127, so the scale is 1 and each quotient is the value itself.
  const float ties[] = {2.5f, 3.5f, -2.5f, -3.5f, 0.5f, -0.5f, 126.5f, -126.5f, 1.49999f, 127.0f};
  for (size_t k = 0; k < K; ++k) w[K + k] = ties[k % std::size(ties)];
  w[2 * K + 3] = w[2 * K + 20] = w[2 * K + 35] = std::numeric_limits<float>::quiet_NaN();  // row 2
  w[3 * K + 36] = 5.0f;  // row 3: the maximum in the tail
  w[4 * K + 36] = std::numeric_limits<float>::infinity();  // rows 4-7: one non-finite value each
  w[5 * K + 7] = -std::numeric_limits<float>::infinity();
  w[6 * K + 33] = std::bit_cast<float>(0xFFC00000u);  // a negative NaN
  w[7 * K + 12] = std::bit_cast<float>(0x7F800001u);  // a signalling NaN
  const roberta::kernels::PackedWeightInt8 packed(w.data(), N, K);
  for (size_t n = 0; n < N; ++n) {
    float amax = 0;
    bool finite = true;
    for (size_t k = 0; k < K; ++k) {
      finite = finite && std::isfinite(w[n * K + k]);
      amax = std::max(amax, std::abs(w[n * K + k]));
    }
    std::vector<int8_t> q(K, 99);
    const float got_scale = roberta::kernels::quantize_weight_row(w.data() + n * K, K, q.data());
    if (!finite) {
      ASSERT_TRUE(std::isnan(got_scale)) << "row " << n;
      for (size_t k = 0; k < K; ++k) {
        ASSERT_EQ(q[k], 0) << "row " << n << " k " << k;
        ASSERT_TRUE(std::isnan(packed.dequantized(n, k))) << "row " << n << " k " << k;
      }
      continue;
    }
    const float scale = amax > 0 ? amax / 127.0f : 1.0f;
    ASSERT_EQ(got_scale, scale) << "row " << n;
    for (size_t k = 0; k < K; ++k) {
      const float v = w[n * K + k] / scale;
      const float f = std::floor(v), frac = v - f;
      float want = frac > 0.5f ? f + 1 : frac < 0.5f ? f : std::fmod(f, 2.0f) == 0 ? f : f + 1;
      want = std::clamp(want, -127.0f, 127.0f);
      ASSERT_EQ(q[k], static_cast<int8_t>(want)) << "row " << n << " k " << k << ": w " << w[n * K + k];
      ASSERT_EQ(packed.dequantized(n, k), want * scale) << "row " << n << " k " << k;
    }
  }
}

}  // namespace

// The split of a product over the pool: every task the same number of panels, bands that differ by
// at most one row block, a task count that is a multiple of the threads where the shape allows it,
// and no row split for products of one row chunk (their weights are then read once).
TEST(BlockSplit, EqualTasksAMultipleOfTheThreads) {
  using roberta::kernels::split_blocks;
  for (size_t threads : {1, 2, 3, 4, 8})
    for (size_t panels : {1, 2, 3, 7, 12, 24, 36, 37, 48, 72, 96})
      for (size_t blocks : {1, 3, 16, 17, 100, 171, 1000}) {
        const auto s = split_blocks(panels, blocks, 16, threads);
        SCOPED_TRACE(::testing::Message() << threads << " threads, " << panels << " panels, " << blocks << " blocks");
        const size_t chunks = (blocks + 15) / 16;
        ASSERT_GE(s.groups, 1u);
        ASSERT_GE(s.bands, 1u);
        EXPECT_EQ(panels % s.groups, 0u);
        EXPECT_LE(s.bands, chunks);
        if (threads == 1 || chunks == 1) {
          EXPECT_EQ(s.bands, 1u);
        }
        if (threads == 1) {
          EXPECT_EQ(s.groups, 1u);
        }
        // Where some divisor of the panels is a multiple of the threads, the tasks divide evenly.
        bool divisible = false;
        for (size_t d = threads; d <= panels; d += threads) divisible |= panels % d == 0;
        if (threads > 1 && divisible) {
          EXPECT_EQ(s.groups * s.bands % threads, 0u);
        }
        if (threads > 1 && divisible && chunks > 1) {
          EXPECT_GE(s.groups * s.bands, 2 * threads);
        }
      }
  // The shapes of roberta-base at 1024 tokens on two threads (int8 panels of 64 columns, 6-row blocks).
  EXPECT_EQ(split_blocks(12, 171, 16, 2).groups, 6u);   // N = 768
  EXPECT_EQ(split_blocks(36, 171, 16, 2).groups, 6u);   // N = 2304
  EXPECT_EQ(split_blocks(48, 171, 16, 2).groups, 8u);   // N = 3072
}

// The split for products whose tasks take whole rows (for a RowsDone): one group of all panels,
// bands a multiple of the threads and at most one per row block; none where the row chunks are
// fewer than the threads.
TEST(BlockSplit, WholeRowsWhereEveryThreadGetsAChunk) {
  using roberta::kernels::split_whole_rows;
  for (size_t threads : {1, 2, 3, 4, 8})
    for (size_t blocks : {1, 3, 16, 17, 31, 32, 33, 100, 171, 1000}) {
      SCOPED_TRACE(::testing::Message() << threads << " threads, " << blocks << " blocks");
      const auto s = split_whole_rows(blocks, 16, threads);
      const size_t chunks = (blocks + 15) / 16;
      if (threads == 1) {
        EXPECT_EQ(s.groups, 1u);
        EXPECT_EQ(s.bands, 1u);
      } else if (chunks < threads) {
        EXPECT_EQ(s.groups, 0u);
        EXPECT_EQ(s.bands, 0u);
      } else {
        EXPECT_EQ(s.groups, 1u);
        EXPECT_GE(s.bands, chunks);  // no band longer than a chunk
        EXPECT_LE(s.bands, blocks);  // no empty band
        if (s.bands < blocks) {
          EXPECT_EQ(s.bands % threads, 0u);
        }
      }
    }
  EXPECT_EQ(split_whole_rows(171, 16, 2).bands, 12u);  // 1024 rows in int8's 6-row blocks
}

// for_each_block visits each (row block, panel, k slice) once, in k order within a tile, and
// finishes each (row chunk, panel) tile once after its last slice, whatever the pool size.
TEST(BlockSplit, ForEachBlockCoversEveryBlockOnce) {
  for (size_t M : {1, 5, 6, 95, 96, 97, 600, 1024})
    for (size_t N : {64, 100, 768}) {
      const size_t K = 500, slice = 192, rows = 6, cols = 64;
      const size_t P = (N + cols - 1) / cols, S = (K + slice - 1) / slice;
      std::vector<std::atomic<int>> seen(M * P * S);
      std::vector<std::atomic<int>> finished(M * N);
      roberta::kernels::for_each_block(
          M, N, K, slice, rows,
          [&](size_t r, size_t n, size_t p, size_t k0, size_t k1) {
            EXPECT_EQ(k1, std::min(K, k0 + slice));
            for (size_t m = r; m < r + n; ++m) {
              if (k0 > 0) {
                EXPECT_EQ(seen[(m * P + p) * S + k0 / slice - 1].load(), 1);
              }
              seen[(m * P + p) * S + k0 / slice]++;
            }
          },
          [&](size_t m0, size_t m1, size_t c0, size_t c1) {
            for (size_t m = m0; m < m1; ++m)
              for (size_t c = c0; c < c1; ++c) {
                EXPECT_EQ(seen[(m * P + c / cols) * S + S - 1].load(), 1);
                finished[m * N + c]++;
              }
          },
          cols);
      for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i].load(), 1) << "M " << M << " N " << N << " at " << i;
      for (size_t i = 0; i < finished.size(); ++i) ASSERT_EQ(finished[i].load(), 1) << "M " << M << " N " << N;
    }
}

// With a RowsDone, for_each_block reports every row once, and only when every tile of the row is
// finished: inside the tasks where the rows are many, after the product where they are few; on
// 1, 2 and 3 threads.
TEST(BlockSplit, RowsDoneOnceEachRowAfterItsLastTile) {
  for (unsigned threads : {1u, 2u, 3u}) {
    roberta::set_num_threads(threads);
    for (size_t M : {1, 6, 95, 97, 200, 600, 1024})
      for (size_t N : {64, 100, 768}) {
        SCOPED_TRACE(::testing::Message() << threads << " threads, M " << M << " N " << N);
        const size_t K = 500, slice = 192, rows = 6, cols = 64;
        std::vector<std::atomic<int>> finished(M * N), reported(M);
        const roberta::kernels::RowsDone done = [&](size_t m0, size_t m1) {
          for (size_t m = m0; m < m1; ++m) {
            for (size_t c = 0; c < N; ++c) ASSERT_EQ(finished[m * N + c].load(), 1) << "row " << m << " col " << c;
            reported[m]++;
          }
        };
        roberta::kernels::for_each_block(
            M, N, K, slice, rows, [](size_t, size_t, size_t, size_t, size_t) {},
            [&](size_t m0, size_t m1, size_t c0, size_t c1) {
              for (size_t m = m0; m < m1; ++m)
                for (size_t c = c0; c < c1; ++c) finished[m * N + c]++;
            },
            cols, &done);
        for (size_t m = 0; m < M; ++m) ASSERT_EQ(reported[m].load(), 1) << "row " << m;
      }
  }
  roberta::set_num_threads(0);
}
