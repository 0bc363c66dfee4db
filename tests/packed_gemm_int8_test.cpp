// The int8 packed GEMM: x's and the weights' quantization, the product against a float64 reference
// of its quantized inputs, bytes at the ends of their ranges, and non-finite values.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "amx_emulation.h"
#include "kernels/activations.h"
#include "kernels/packed_gemm.h"
#include "kernels/packed_gemm_int8.h"
#include "packed_gemm_test_util.h"

namespace {

using roberta::test::emulation_runs_here;

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
