// The bf16 packed GEMM (bf16 rounding, the product against a float64 reference of rounded inputs),
// and the AMX kernels for bf16 and int8: emulated on any CPU with AVX-512, and on AMX tiles where present.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <utility>
#include <vector>

#include "amx_emulation.h"
#include "kernels/activations.h"
#include "kernels/isa.h"
#include "kernels/packed_gemm.h"
#include "kernels/packed_gemm_int8.h"
#include "packed_gemm_test_util.h"
#include "roberta/error.h"

namespace {

using roberta::test::emulation_runs_here;

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

// The edges of every kernel's blocks on small shapes, quick enough for an emulator (the test above
// runs the large ones): each row count to 13 (blocks of 4, 6, 8 and 12 rows and their remainders),
// ragged panels, odd k and odd pair counts, and two k passes (513 pairs: slices of 257 and 256, the
// second starting at an odd pair); a bias on odd M; the product added onto y's earlier slice.
TEST(PackedGemmBf16, BlockEdgesMatchFloat64ReferenceOfBf16RoundedInputs) {
  std::mt19937 rng(11);
  std::printf("  kernel: %s\n", roberta::kernels::bf16_kernel_name());
  for (size_t M = 1; M <= 13; ++M)
    for (size_t N : {3, 32, 45, 70})
      for (size_t K : {1, 2, 3, 5, 8, 301, 1026}) {
        if (K == 1026 && M % 4 != 1) continue;
        Bf16Case c(M, N, K, rng);
        c.use_bias = M % 2 == 1;
        std::vector<float> y = c.fresh_y();
        roberta::kernels::packed_linear(y.data(), c.ldy(), c.x.data(), c.packed, c.bias_arg(), M);
        EXPECT_LT(c.error(y), 1e-5) << "M=" << M << " N=" << N << " K=" << K;
      }
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

// The AMX kernels (kernels/amx_gemm.h). Their tile instructions are emulated in C++ on every
// CPU with AVX-512 (the epilogue's), so the 32 x 32 tile blocking, the edges (rows past a 16-row
// tile, k not a multiple of 16 quads or pairs, columns past N) and the epilogues are checked here
// against a float64 reference; where the CPU has AMX, the hardware tiles must give the emulation's
// int8 results exactly and bf16 results within fp32 rounding of the reference.
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

}  // namespace
