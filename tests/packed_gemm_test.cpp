// The packed GEMM against a float64 reference, over shapes that hit every edge: rows not a
// multiple of the row block (8 fp32, 12 bf16) or of the 16-block chunk, columns not a multiple of
// the 32-column panel, k not a multiple of the 256-deep slice, with and without bias, a strided
// output, and the fused activation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "kernels/activations.h"
#include "kernels/packed_gemm.h"
#include "kernels/packed_gemm_int8.h"

namespace {

TEST(PackedGemm, MatchesFloat64Reference) {
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::printf("  kernel: %s\n", roberta::kernels::packed_gemm_isa());
  for (size_t M : {1, 3, 8, 12, 13, 64, 70, 100, 197}) {
    for (size_t N : {1, 31, 32, 33, 100, 768}) {
      for (size_t K : {1, 7, 256, 300, 770}) {
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

// The activation applied by the GEMM's epilogue equals the activation applied afterwards, on
// every tile of a product split over several tasks and row chunks.
TEST(PackedGemm, FusedActivationEqualsSeparatePass) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const size_t M = 197, N = 300, K = 64, ldy = N + 2;
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
        ASSERT_NEAR(fused[m * ldy + n], roberta::kernels::activate(act, plain[m * ldy + n]), 1e-6);
      }
      ASSERT_EQ(fused[m * ldy + N], -7.0f) << "wrote past N";
    }
  }
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

TEST(PackedGemmBf16, MatchesFloat64ReferenceOfBf16RoundedInputs) {
  EXPECT_EQ(roberta::kernels::to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(roberta::kernels::to_bf16(1.00390625f), 0x3F80);  // halfway: to even
  EXPECT_EQ(roberta::kernels::to_bf16(1.01171875f), 0x3F82);  // halfway: to even (up)
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::printf("  AVX512-BF16 instructions: %s\n", roberta::kernels::has_bf16_instructions() ? "yes" : "no");
  for (size_t M : {1, 5, 8, 12, 17, 70, 200}) {
    for (size_t N : {3, 32, 45, 768}) {
      for (size_t K : {1, 2, 7, 256, 301, 768}) {
        std::vector<float> x(M * K), w(N * K), bias(N);
        for (auto& v : x) v = dist(rng);
        for (auto& v : w) v = dist(rng);
        for (auto& v : bias) v = dist(rng);
        const roberta::kernels::PackedWeightBf16 packed(w.data(), N, K);
        const size_t ldy = N + 3;
        std::vector<float> y(M * ldy, -7.0f);
        roberta::kernels::packed_linear(y.data(), ldy, x.data(), packed, bias.data(), M);
        double max_err = 0;
        for (size_t m = 0; m < M; ++m) {
          for (size_t n = 0; n < N; ++n) {
            double want = bias[n];
            for (size_t k = 0; k < K; ++k)
              want += static_cast<double>(round_bf16(x[m * K + k])) * round_bf16(w[n * K + k]);
            max_err = std::max(max_err, std::abs(want - y[m * ldy + n]) / std::sqrt(static_cast<double>(K)));
          }
          for (size_t n = N; n < ldy; ++n) ASSERT_EQ(y[m * ldy + n], -7.0f) << "wrote past N";
        }
        EXPECT_LT(max_err, 1e-5) << "M=" << M << " N=" << N << " K=" << K;
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

// The int8 product against a float64 reference of its quantized inputs: the weight as
// PackedWeightInt8 rounded it, x as quantize_rows rounds it.
TEST(PackedGemmInt8, MatchesFloat64ReferenceOfQuantizedInputs) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::printf("  AVX512-VNNI instructions: %s\n", roberta::kernels::has_vnni_instructions() ? "yes" : "no");
  for (size_t M : {1, 5, 12, 13, 70, 200}) {
    for (size_t N : {3, 32, 45, 768}) {
      for (size_t K : {1, 3, 4, 256, 301, 1030, 3072}) {
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
        roberta::kernels::packed_linear(y.data(), ldy, x.data(), packed, bias.data(), M);
        double max_err = 0;
        for (size_t m = 0; m < M; ++m) {
          const auto* bytes = reinterpret_cast<const uint8_t*>(quads.data() + m * Q);
          for (size_t n = 0; n < N; ++n) {
            double want = bias[n];
            for (size_t k = 0; k < K; ++k)
              want += (static_cast<double>(bytes[k]) - 128.0) * xs[m] * packed.dequantized(n, k);
            max_err = std::max(max_err, std::abs(want - y[m * ldy + n]) / (1.0 + std::abs(want)));
          }
          for (size_t n = N; n < ldy; ++n) ASSERT_EQ(y[m * ldy + n], -7.0f) << "wrote past N";
        }
        EXPECT_LT(max_err, 1e-5) << "M=" << M << " N=" << N << " K=" << K;
      }
    }
  }
}

}  // namespace
