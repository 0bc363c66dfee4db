// Kernels against float64 references, and the instruction-set choice (kernels/isa.h).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "amx_emulation.h"
#include "kernels/attention.h"
#include "kernels/isa.h"
#include "runtime/cpu.h"
#include "runtime/plan.h"
#include "kernels/layer_norm.h"
#include "kernels/packed_gemm.h"
#include "kernels/packed_gemm_int8.h"
#include "roberta/error.h"
#include "test_util.h"

namespace {

using roberta::kernels::Isa;

// LayerNorm(x + residual) in float64.
std::vector<double> layer_norm_reference(const std::vector<float>& x, const std::vector<float>& r,
                                         const std::vector<float>& g, const std::vector<float>& b, size_t rows,
                                         size_t cols, double eps) {
  std::vector<double> out(rows * cols);
  for (size_t i = 0; i < rows; ++i) {
    double mean = 0, var = 0;
    for (size_t c = 0; c < cols; ++c) mean += static_cast<double>(x[i * cols + c] + r[i * cols + c]);
    mean /= static_cast<double>(cols);
    for (size_t c = 0; c < cols; ++c) {
      const double d = static_cast<double>(x[i * cols + c] + r[i * cols + c]) - mean;
      var += d * d;
    }
    var /= static_cast<double>(cols);
    for (size_t c = 0; c < cols; ++c)
      out[i * cols + c] = (static_cast<double>(x[i * cols + c] + r[i * cols + c]) - mean) / std::sqrt(var + eps) * g[c] + b[c];
  }
  return out;
}

// The engine calls layer_norm with out == residual (and the embeddings with out == x): the result
// must be the same as into a separate buffer. (Regression: the row kernel marked x and residual
// __restrict while out aliased them — undefined behaviour that GCC 12 happened not to exploit.)
TEST(LayerNorm, OutputMayAliasInputOrResidual) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  for (size_t cols : {1, 7, 8, 33, 768}) {
    const size_t rows = 37;
    std::vector<float> x(rows * cols), r(rows * cols), g(cols), b(cols);
    for (auto* v : {&x, &r, &g, &b})
      for (auto& e : *v) e = dist(rng);
    const auto want = layer_norm_reference(x, r, g, b, rows, cols, 1e-5);
    std::vector<float> separate(rows * cols), into_x = x, into_r = r;
    roberta::kernels::layer_norm(separate.data(), x.data(), r.data(), g.data(), b.data(), rows, cols, 1e-5);
    roberta::kernels::layer_norm(into_x.data(), into_x.data(), r.data(), g.data(), b.data(), rows, cols, 1e-5);
    roberta::kernels::layer_norm(into_r.data(), x.data(), into_r.data(), g.data(), b.data(), rows, cols, 1e-5);
    for (size_t i = 0; i < rows * cols; ++i) {
      ASSERT_NEAR(separate[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << "cols " << cols << " element " << i;
      ASSERT_EQ(into_x[i], separate[i]) << "out == x, cols " << cols << " element " << i;
      ASSERT_EQ(into_r[i], separate[i]) << "out == residual, cols " << cols << " element " << i;
    }
  }
}

// Hidden states with a large common offset (as some RoBERTa dimensions have): the mean must not
// swamp the variance.
TEST(LayerNorm, MatchesFloat64WithALargeMean) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (size_t cols : {5, 16, 100, 768, 1024}) {
    const size_t rows = 9;
    std::vector<float> x(rows * cols), r(rows * cols), g(cols), b(cols);
    for (auto& e : x) e = 500.0f + dist(rng);
    for (auto& e : r) e = 500.0f + dist(rng);
    for (auto& e : g) e = 1.0f + 0.1f * dist(rng);
    for (auto& e : b) e = 0.1f * dist(rng);
    const auto want = layer_norm_reference(x, r, g, b, rows, cols, 1e-5);
    std::vector<float> out(rows * cols);
    roberta::kernels::layer_norm(out.data(), x.data(), r.data(), g.data(), b.data(), rows, cols, 1e-5);
    double worst = 0;
    for (size_t i = 0; i < rows * cols; ++i) worst = std::max(worst, std::abs(out[i] - want[i]));
    std::printf("  cols %4zu: max |difference| from float64 %.3g (%s)\n", cols, worst,
                roberta::kernels::isa_name(roberta::kernels::usable_isa()));
    EXPECT_LT(worst, 2e-4) << "cols " << cols;
  }
}

double bf16_value(float x) {
  return std::bit_cast<float>(static_cast<uint32_t>(roberta::kernels::to_bf16(x)) << 16);
}

// softmax(Q Kᵀ / sqrt(d)) V per sequence and head, in float64 from the same float inputs; with
// `round_probabilities`, P is rounded to bf16 before the product with V (as the bf16 kernel does).
std::vector<double> attention_reference(const std::vector<float>& qkv, const std::vector<size_t>& offsets,
                                        size_t heads, size_t d, bool round_probabilities = false) {
  // round_probabilities: exp(score - max) rounded to bf16, as the bf16 kernel does.
  const size_t H = heads * d, T = offsets.back();
  std::vector<double> ctx(T * H);
  for (size_t s = 0; s + 1 < offsets.size(); ++s)
    for (size_t h = 0; h < heads; ++h)
      for (size_t i = offsets[s]; i < offsets[s + 1]; ++i) {
        std::vector<double> p;
        double max = -1e300, sum = 0;
        for (size_t j = offsets[s]; j < offsets[s + 1]; ++j) {
          double dot = 0;
          for (size_t c = 0; c < d; ++c) dot += double{qkv[i * 3 * H + h * d + c]} * qkv[j * 3 * H + H + h * d + c];
          p.push_back(dot / std::sqrt(static_cast<double>(d)));
          max = std::max(max, p.back());
        }
        for (auto& v : p) sum += (v = std::exp(v - max));
        std::vector<double> acc(d);  // (each column summed over the keys in order)
        for (size_t j = offsets[s]; j < offsets[s + 1]; ++j) {
          const double w = round_probabilities ? bf16_value(static_cast<float>(p[j - offsets[s]])) : p[j - offsets[s]];
          for (size_t c = 0; c < d; ++c) acc[c] += w * qkv[j * 3 * H + 2 * H + h * d + c];
        }
        for (size_t c = 0; c < d; ++c) ctx[i * H + h * d + c] = acc[c] / sum;
      }
  return ctx;
}

// Sequences of lengths around the kernels' block sizes (panels of 64 keys with AVX-512, 16 with
// AVX2; 48 query rows), head size 64 (the AVX-512 or AVX2 kernel where the CPU has it) and 32 (the
// OpenBLAS path everywhere).
TEST(Attention, MatchesFloat64Reference) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (size_t d : {64, 32}) {
    const size_t heads = 3, H = heads * d;
    const std::vector<size_t> offsets = {0, 1, 6, 37, 69, 102, 202, 332, 381};
    const size_t T = offsets.back();
    std::vector<float> qkv(T * 3 * H), ctx(T * H);
    for (auto& v : qkv) v = dist(rng);
    roberta::kernels::self_attention(ctx.data(), qkv.data(), offsets.data(), offsets.size() - 1, heads, d);
    const auto want = attention_reference(qkv, offsets, heads, d);
    double worst = 0;
    for (size_t i = 0; i < T * H; ++i) worst = std::max(worst, std::abs(ctx[i] - want[i]));
    std::printf("  head size %zu: max |difference| from float64 %.3g (%s)\n", d, worst,
                roberta::kernels::isa_name(roberta::kernels::usable_isa()));
    EXPECT_LT(worst, 1e-5) << "head size " << d;
  }
}

// The bf16 attention (where the CPU has AVX512-BF16) against float64 of its rounded inputs: Q, K
// and V rounded to bf16, and the unnormalised probabilities exp(score - max) rounded to bf16 before
// the product with V (the division by their sum comes after it). Against the unrounded
// float64 result the difference is several times larger, so the test sees the rounding.
// Without AVX512-BF16 (or with ROBERTA_ISA below it) kBf16 runs the fp32 path.
TEST(Attention, Bf16MatchesFloat64OfItsRoundedInputs) {
  using roberta::kernels::AttentionPrecision;
  const bool bf16 = roberta::kernels::usable_isa() >= Isa::kAvx512Bf16;
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const size_t heads = 2, d = 64, H = heads * d;
  const std::vector<size_t> offsets = {0, 1, 8, 39, 72, 121, 250};
  const size_t T = offsets.back();
  std::vector<float> qkv(T * 3 * H), ctx(T * H);
  for (auto& v : qkv) v = dist(rng);
  roberta::kernels::self_attention(ctx.data(), qkv.data(), offsets.data(), offsets.size() - 1, heads, d, {},
                                   AttentionPrecision::kBf16);
  std::vector<float> rounded = qkv;
  for (auto& v : rounded) v = static_cast<float>(bf16_value(v));
  const auto exact = attention_reference(qkv, offsets, heads, d);
  const auto want = bf16 ? attention_reference(rounded, offsets, heads, d, true) : exact;
  double worst = 0, from_exact = 0;
  for (size_t i = 0; i < T * H; ++i) {
    worst = std::max(worst, std::abs(ctx[i] - want[i]));
    from_exact = std::max(from_exact, std::abs(ctx[i] - exact[i]));
  }
  std::printf("  %s: max |difference| %.3g from float64 of the rounded inputs, %.3g from unrounded float64\n",
              bf16 ? "bf16" : "fp32 (no AVX512-BF16)", worst, from_exact);
  // bf16: a probability whose fp32 and float64 values round to neighbouring bf16 values differs by
  // 2^-8 of itself, hence the tolerance.
  EXPECT_LT(worst, bf16 ? 2e-3 : 1e-5);
  if (bf16) {
    EXPECT_GT(from_exact, 3 * worst);
  }
}

// The bf16 attention on AMX tiles (kernels/attention/amx.cpp), its tile instructions emulated on any
// CPU with AVX512-BF16, against float64 of its rounded inputs as above; on a CPU with AMX the
// hardware tiles (self_attention's kBf16 there) too. Lengths: a query block's tail (16 rows per
// block), keys ending inside a 64-key panel and an odd count (a key pair's zero partner), three
// panels; and the scores far below zero of the test after this one.
TEST(Attention, AmxBf16MatchesFloat64OfItsRoundedInputs) {
  using roberta::kernels::AttentionPrecision;
  if (roberta::kernels::detected_isa() < Isa::kAvx512Bf16)
    GTEST_SKIP() << "the emulated AMX attention packs and softmaxes with AVX512-BF16, which this CPU lacks";
  const bool tiles = roberta::kernels::usable_isa() >= Isa::kAmx;
  std::mt19937 rng(6);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const size_t heads = 2, d = 64, H = heads * d;
  const std::vector<size_t> offsets = {0, 1, 8, 39, 72, 121, 250};
  const size_t T = offsets.back();
  std::vector<float> qkv(T * 3 * H);
  for (auto& v : qkv) v = dist(rng);
  std::vector<float> rounded = qkv;
  for (auto& v : rounded) v = static_cast<float>(bf16_value(v));
  const auto want = attention_reference(rounded, offsets, heads, d, true);
  const auto exact = attention_reference(qkv, offsets, heads, d);
  std::vector<float> emulated(T * H, -7.0f);
  roberta::kernels::self_attention_amx_emulated(emulated.data(), qkv.data(), offsets.data(), offsets.size() - 1, heads);
  double worst = 0, from_exact = 0;
  for (size_t i = 0; i < T * H; ++i) {
    worst = std::max(worst, std::abs(emulated[i] - want[i]));
    from_exact = std::max(from_exact, std::abs(emulated[i] - exact[i]));
  }
  std::printf("  emulated tiles: max |difference| %.3g from float64 of the rounded inputs, %.3g from unrounded\n",
              worst, from_exact);
  EXPECT_LT(worst, 2e-3);
  EXPECT_GT(from_exact, 3 * worst);
  if (tiles) {
    std::vector<float> ctx(T * H);
    roberta::kernels::self_attention(ctx.data(), qkv.data(), offsets.data(), offsets.size() - 1, heads, d, {},
                                     AttentionPrecision::kBf16);
    double tile_worst = 0;
    for (size_t i = 0; i < T * H; ++i) tile_worst = std::max(tile_worst, std::abs(ctx[i] - want[i]));
    std::printf("  AMX tiles: max |difference| %.3g from float64 of the rounded inputs\n", tile_worst);
    EXPECT_LT(tile_worst, 2e-3);
  } else {
    std::printf("  no AMX tiles here (or ROBERTA_ISA below amx): only the emulation ran\n");
  }
}

// The AMX attention from Q, K, V already rounded to bf16, head by head (as the QKV product's
// epilogue writes them) gives its results from the fp32 values (checked against float64 above) bit
// for bit: the kernel rounds them the same way itself. Emulated tiles everywhere with AVX512-BF16,
// the hardware where the CPU has AMX; lengths as above, with 16-row blocks and 64-key panels
// ending in between.
TEST(Attention, AmxFromBf16InputsEqualsFromTheirFp32Values) {
  using roberta::kernels::AttentionPrecision;
  if (roberta::kernels::detected_isa() < Isa::kAvx512Bf16)
    GTEST_SKIP() << "the emulated AMX attention packs and softmaxes with AVX512-BF16, which this CPU lacks";
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  const size_t heads = 3, d = 64, H = heads * d;
  const std::vector<size_t> offsets = {0, 1, 17, 33, 33, 97, 227};
  const size_t T = offsets.back();
  std::vector<float> qkv(T * 3 * H);
  std::vector<uint16_t> qkv16(T * 3 * H);  // (3 · heads, T, 64): Q of each head, then K, then V
  for (size_t t = 0; t < T; ++t)
    for (size_t j = 0; j < 3 * H; ++j) {  // j: part j / H, head j % H / d, column j % d
      const float v = dist(rng);
      qkv[t * 3 * H + j] = v;
      const float r = static_cast<float>(bf16_value(v));  // (round to nearest even, as the kernels)
      uint32_t bits;
      std::memcpy(&bits, &r, 4);
      qkv16[((j / d) * T + t) * d + j % d] = static_cast<uint16_t>(bits >> 16);
    }
  // ... and with the context written as bf16 pairs: to_bf16_pairs of the fp32 context, bit for bit
  const auto pairs_of = [&](const std::vector<float>& ctx) {
    std::vector<uint32_t> pairs(T * H / 2);
    roberta::kernels::to_bf16_pairs(ctx.data(), T, H, pairs.data());
    return pairs;
  };
  std::vector<float> want(T * H, -7.0f), got(T * H, -7.0f);
  roberta::kernels::self_attention_amx_emulated(want.data(), qkv.data(), offsets.data(), offsets.size() - 1, heads);
  roberta::kernels::self_attention_amx_emulated(got.data(), qkv16.data(), offsets.data(), offsets.size() - 1, heads);
  EXPECT_EQ(got, want) << "emulated tiles";
  std::vector<uint32_t> got_pairs(T * H / 2, 0xDEADBEEF);
  roberta::kernels::self_attention_amx_emulated(got_pairs.data(), qkv16.data(), offsets.data(), offsets.size() - 1,
                                                heads);
  EXPECT_EQ(got_pairs, pairs_of(want)) << "emulated tiles, bf16 context";
  const roberta::kernels::RelativePositions absolute;
  if (roberta::kernels::usable_isa() >= Isa::kAmx) {
    ASSERT_TRUE(roberta::kernels::attention_takes_bf16(d, absolute, AttentionPrecision::kBf16));
    std::vector<float> tiles_want(T * H, -7.0f), tiles(T * H, -7.0f);
    roberta::kernels::self_attention(tiles_want.data(), qkv.data(), offsets.data(), offsets.size() - 1, heads, d,
                                     absolute, AttentionPrecision::kBf16);
    roberta::kernels::self_attention(tiles.data(), qkv16.data(), offsets.data(), offsets.size() - 1, heads, d,
                                     absolute, AttentionPrecision::kBf16);
    EXPECT_EQ(tiles, tiles_want) << "AMX tiles";
    std::vector<uint32_t> tile_pairs(T * H / 2, 0xDEADBEEF);
    roberta::kernels::self_attention(tile_pairs.data(), qkv16.data(), offsets.data(), offsets.size() - 1, heads, d,
                                     absolute, AttentionPrecision::kBf16);
    EXPECT_EQ(tile_pairs, pairs_of(tiles_want)) << "AMX tiles, bf16 context";
  } else {
    std::printf("  no AMX tiles here (or ROBERTA_ISA below amx): only the emulation ran\n");
  }
  // Refused where the AMX attention does not run: fp32 precision, another head size.
  EXPECT_FALSE(roberta::kernels::attention_takes_bf16(d, absolute, AttentionPrecision::kFp32));
  EXPECT_FALSE(roberta::kernels::attention_takes_bf16(32, absolute, AttentionPrecision::kBf16));
  EXPECT_THROW(roberta::kernels::self_attention(got.data(), qkv16.data(), offsets.data(), offsets.size() - 1, heads, d,
                                                absolute, AttentionPrecision::kFp32),
               roberta::Error);
}

// Scores far below zero, for every key: the kernels take each row's maximum as they compute the
// scores, and the zero scores of the padding past L (keys are packed in panels of 64, 16 with
// AVX2) must not count, else every exponential underflows (exp is clamped at exp(-87.3)) and the
// probabilities come out uniform instead of peaked on the first key. Both precisions, sequence
// lengths that end inside a panel (and, for AVX2, inside its second half).
TEST(Attention, PaddingDoesNotEnterTheRowMaximum) {
  using roberta::kernels::AttentionPrecision;
  const size_t heads = 1, d = 64, H = heads * d;
  const std::vector<size_t> offsets = {0, 33, 33 + 100, 33 + 100 + 45};  // (45 ends 13 keys into a panel of 16)
  const size_t T = offsets.back();
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> qkv(T * 3 * H);
  for (size_t s = 0; s + 1 < offsets.size(); ++s) {
    const size_t L = offsets[s + 1] - offsets[s];
    for (size_t t = offsets[s]; t < offsets[s + 1]; ++t) {
      float* row = qkv.data() + t * 3 * H;
      row[0] = 40.0f;                                                          // q = 40 e0
      row[H] = -40.0f * (1.0f + static_cast<float>(t - offsets[s]) / static_cast<float>(L));  // k_j = -40 (1 + j / L) e0
      for (size_t c = 0; c < d; ++c) row[2 * H + c] = dist(rng);               // v
    }
  }
  // scores -200 .. -400: softmax all but one-hot on the first key of each sequence
  for (const auto precision : {AttentionPrecision::kFp32, AttentionPrecision::kBf16}) {
    std::vector<float> ctx(T * H);
    roberta::kernels::self_attention(ctx.data(), qkv.data(), offsets.data(), offsets.size() - 1, heads, d, {},
                                     precision);
    std::vector<float> rounded = qkv;
    const bool bf16 = precision == AttentionPrecision::kBf16 && roberta::kernels::usable_isa() >= Isa::kAvx512Bf16;
    if (bf16)
      for (auto& v : rounded) v = static_cast<float>(bf16_value(v));
    const auto want = attention_reference(rounded, offsets, heads, d, bf16);
    double worst = 0;
    for (size_t i = 0; i < T * H; ++i) worst = std::max(worst, std::abs(ctx[i] - want[i]));
    EXPECT_LT(worst, bf16 ? 2e-3 : 1e-5) << (bf16 ? "bf16" : "fp32");
  }
  if (roberta::kernels::detected_isa() >= Isa::kAvx512Bf16) {  // the AMX kernel's own maximum
    std::vector<float> ctx(T * H), rounded = qkv;
    for (auto& v : rounded) v = static_cast<float>(bf16_value(v));
    roberta::kernels::self_attention_amx_emulated(ctx.data(), qkv.data(), offsets.data(), offsets.size() - 1, heads);
    const auto want = attention_reference(rounded, offsets, heads, d, true);
    double worst = 0;
    for (size_t i = 0; i < T * H; ++i) worst = std::max(worst, std::abs(ctx[i] - want[i]));
    EXPECT_LT(worst, 2e-3) << "AMX, emulated tiles";
  }
}

// Sequences longer than one chunk of keys (512, the AMX kernel's 2048: the kernels then take the
// keys chunk by chunk with a running softmax, rescaling the context so far when a later chunk
// holds a larger score): 513 keys (a last chunk of one key), 1301 (an odd count, the last chunk
// ending inside a panel), and 2055 (two AMX chunks, the last of 7 keys; 129 blocks of 16 query
// rows, so the AMX kernel's last group of 8 blocks has one) whose scores climb by 3 every 512 keys
// in head 0 (each chunk's maximum above the ones before: the earlier chunks' exponentials are
// scaled down by e^-3 and more) and fall so in head 1 (the maximum in the first chunk, the later
// chunks weighing e^-3 and less). Every path against float64: fp32, bf16 (on AMX tiles where the
// CPU has them, else AVX512-BF16; the lower ones where ROBERTA_ISA caps it), the AMX kernel with
// its tiles emulated, and on the tiles from bf16 Q, K, V (equal to its results from their fp32
// values), the context also as bf16 pairs (the bf16 and int8 encoders' form).
TEST(Attention, LongSequencesInChunksOfKeysMatchFloat64) {
  using roberta::kernels::AttentionPrecision;
  std::mt19937 rng(12);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const size_t heads = 2, d = 64, H = heads * d;
  const std::vector<size_t> offsets = {0, 513, 1814, 3869};
  const size_t T = offsets.back();
  std::vector<float> qkv(T * 3 * H);
  for (auto& v : qkv) v = dist(rng);
  for (size_t t = offsets[2]; t < offsets[3]; ++t) {  // q random but for column 0, k small but for it
    const float step = 3.0f * static_cast<float>((t - offsets[2]) / 512);
    float* row = qkv.data() + t * 3 * H;
    for (size_t c = 0; c < H; ++c) row[H + c] *= 0.3f;
    row[0] = row[d] = 8.0f;         // q of both heads
    row[H] = step - 4.0f;           // head 0: scores -4, -1, 2, 5, 8 (q · k / 8) by 512 keys, plus ~0.3
    row[H + d] = 8.0f - step;       // head 1: 8, 5, 2, -1, -4
  }
  std::vector<float> rounded = qkv;
  for (auto& v : rounded) v = static_cast<float>(bf16_value(v));
  const auto exact = attention_reference(qkv, offsets, heads, d);
  const auto want16 = attention_reference(rounded, offsets, heads, d, true);
  const auto worst_of = [&](const std::vector<float>& got, const std::vector<double>& want) {
    double worst = 0;
    for (size_t i = 0; i < T * H; ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
    return worst;
  };
  std::vector<float> ctx(T * H, -7.0f);
  roberta::kernels::self_attention(ctx.data(), qkv.data(), offsets.data(), offsets.size() - 1, heads, d);
  std::printf("  fp32: max |difference| from float64 %.3g (%s)\n", worst_of(ctx, exact),
              roberta::kernels::isa_name(roberta::kernels::usable_isa()));
  EXPECT_LT(worst_of(ctx, exact), 1e-5);
  const bool bf16 = roberta::kernels::usable_isa() >= Isa::kAvx512Bf16;
  std::fill(ctx.begin(), ctx.end(), -7.0f);
  roberta::kernels::self_attention(ctx.data(), qkv.data(), offsets.data(), offsets.size() - 1, heads, d, {},
                                   AttentionPrecision::kBf16);
  std::printf("  kBf16: max |difference| %.3g from float64 of the rounded inputs, %.3g from unrounded\n",
              worst_of(ctx, bf16 ? want16 : exact), worst_of(ctx, exact));
  EXPECT_LT(worst_of(ctx, bf16 ? want16 : exact), bf16 ? 2e-3 : 1e-5);
  if (roberta::kernels::detected_isa() < Isa::kAvx512Bf16) {
    std::printf("  no AVX512-BF16 here: the AMX kernel's emulation not run\n");
    return;
  }
  std::vector<float> emulated(T * H, -7.0f);
  roberta::kernels::self_attention_amx_emulated(emulated.data(), qkv.data(), offsets.data(), offsets.size() - 1, heads);
  std::printf("  AMX, emulated tiles: max |difference| %.3g from float64 of the rounded inputs, %.3g from unrounded\n",
              worst_of(emulated, want16), worst_of(emulated, exact));
  EXPECT_LT(worst_of(emulated, want16), 2e-3);
  EXPECT_GT(worst_of(emulated, exact), 3 * worst_of(emulated, want16));
  if (roberta::kernels::usable_isa() < Isa::kAmx) {
    std::printf("  no AMX tiles here (or ROBERTA_ISA below amx): the AMX kernel only emulated\n");
    return;
  }
  std::vector<uint16_t> qkv16(T * 3 * H);  // (3 · heads, T, 64): Q of each head, then K, then V
  for (size_t t = 0; t < T; ++t)
    for (size_t j = 0; j < 3 * H; ++j) {
      uint32_t bits;
      std::memcpy(&bits, &rounded[t * 3 * H + j], 4);
      qkv16[((j / d) * T + t) * d + j % d] = static_cast<uint16_t>(bits >> 16);
    }
  std::vector<float> from16(T * H, -7.0f);
  roberta::kernels::self_attention(from16.data(), qkv16.data(), offsets.data(), offsets.size() - 1, heads, d, {},
                                   AttentionPrecision::kBf16);
  EXPECT_EQ(from16, ctx) << "AMX tiles from bf16 Q, K, V";
  std::vector<uint32_t> pairs(T * H / 2, 0xDEADBEEF), want_pairs(T * H / 2);
  roberta::kernels::self_attention(pairs.data(), qkv16.data(), offsets.data(), offsets.size() - 1, heads, d, {},
                                   AttentionPrecision::kBf16);
  roberta::kernels::to_bf16_pairs(ctx.data(), T, H, want_pairs.data());
  EXPECT_EQ(pairs, want_pairs) << "AMX tiles from bf16 Q, K, V, the context as bf16 pairs";
}

// NaN and infinite inputs give NaN exactly where float64 (and PyTorch's softmax) does: in each
// sequence a NaN in one query of head 0 (that row's scores all NaN: its head-0 context NaN), +inf
// in one key of head 1 (scores +inf for queries whose column is positive: inf - inf, NaN; -inf for
// the others: probability 0, a finite context), a NaN in the last value of head 2 (column 7 of
// every row NaN, the other columns finite). Lengths: one chunk, past 512 keys (fp32's chunks) and
// past 2048 (the AMX kernel's). Every path: fp32, kBf16 (AMX tiles or AVX512-BF16 where the CPU
// has them), the AMX kernel emulated, and on the tiles from bf16 Q, K, V.
TEST(Attention, NonFiniteInputsGiveNaNWhereFloat64Does) {
  using roberta::kernels::AttentionPrecision;
  std::mt19937 rng(13);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const size_t heads = 3, d = 64, H = heads * d;
  const std::vector<size_t> offsets = {0, 37, 100, 613, 2666};
  const size_t T = offsets.back();
  std::vector<float> qkv(T * 3 * H);
  for (auto& v : qkv) v = dist(rng);
  for (size_t s = 0; s + 1 < offsets.size(); ++s) {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    qkv[(offsets[s] + 1) * 3 * H + 3] = nan;                          // Q, head 0
    qkv[(offsets[s] + 2) * 3 * H + H + d + 5] = inf;                  // K, head 1
    qkv[(offsets[s + 1] - 1) * 3 * H + 2 * H + 2 * d + 7] = nan;      // V, head 2
  }
  std::vector<float> rounded = qkv;
  for (auto& v : rounded) v = static_cast<float>(bf16_value(v));
  const auto exact = attention_reference(qkv, offsets, heads, d);
  const auto want16 = attention_reference(rounded, offsets, heads, d, true);
  size_t nans = 0;
  for (double v : exact) nans += std::isnan(v);
  ASSERT_GT(nans, 0u);
  ASSERT_LT(nans, exact.size() / 2);
  const auto check = [&](const std::vector<float>& got, const std::vector<double>& want, double tol, const char* what) {
    double worst = 0;
    for (size_t i = 0; i < T * H; ++i) {
      ASSERT_EQ(std::isnan(got[i]), std::isnan(want[i])) << what << ": token " << i / H << " column " << i % H;
      ASSERT_EQ(std::isinf(got[i]), std::isinf(want[i])) << what << ": token " << i / H << " column " << i % H;
      if (std::isfinite(want[i])) worst = std::max(worst, std::abs(got[i] - want[i]));
    }
    EXPECT_LT(worst, tol) << what;
  };
  std::vector<float> ctx(T * H, -7.0f);
  roberta::kernels::self_attention(ctx.data(), qkv.data(), offsets.data(), offsets.size() - 1, heads, d);
  check(ctx, exact, 1e-5, "fp32");
  const bool bf16 = roberta::kernels::usable_isa() >= Isa::kAvx512Bf16;
  std::fill(ctx.begin(), ctx.end(), -7.0f);
  roberta::kernels::self_attention(ctx.data(), qkv.data(), offsets.data(), offsets.size() - 1, heads, d, {},
                                   AttentionPrecision::kBf16);
  check(ctx, bf16 ? want16 : exact, bf16 ? 2e-3 : 1e-5, "kBf16");
  if (roberta::kernels::detected_isa() < Isa::kAvx512Bf16) return;
  std::vector<float> emulated(T * H, -7.0f);
  roberta::kernels::self_attention_amx_emulated(emulated.data(), qkv.data(), offsets.data(), offsets.size() - 1, heads);
  check(emulated, want16, 2e-3, "AMX, emulated tiles");
  if (roberta::kernels::usable_isa() < Isa::kAmx) return;
  std::vector<uint16_t> qkv16(T * 3 * H);  // (3 · heads, T, 64): Q of each head, then K, then V
  for (size_t t = 0; t < T; ++t)
    for (size_t j = 0; j < 3 * H; ++j)
      qkv16[((j / d) * T + t) * d + j % d] =
          static_cast<uint16_t>(std::bit_cast<uint32_t>(rounded[t * 3 * H + j]) >> 16);
  std::vector<float> from16(T * H, -7.0f);
  roberta::kernels::self_attention(from16.data(), qkv16.data(), offsets.data(), offsets.size() - 1, heads, d, {},
                                   AttentionPrecision::kBf16);
  check(from16, want16, 2e-3, "AMX tiles from bf16 Q, K, V");
}

// Which attention the bf16 and int8 encoders ask for: the plan's (runtime_plan_test.cpp tests the
// plan's rule for every CPU and setting), and `roberta info` says which and why.
TEST(Attention, Bf16WhereThePlanSaysSo) {
  const roberta::runtime::KernelPlan& plan = roberta::runtime::plan();
  const std::string path = roberta::kernels::attention_path();
  std::printf("  here: %s\n", path.c_str());
  EXPECT_EQ(path.rfind(plan.bf16_attention ? "bf16" : "fp32", 0), 0u) << path;
  if (plan.bf16_attention) {
    EXPECT_NE(path.find(plan.isa >= Isa::kAmx ? "AMX" : "AVX512-BF16"), std::string::npos) << path;
  }
  if (roberta::runtime::is_arm_level(plan.detected)) {  // 64-bit ARM: fp32, NEON blocks unless capped
    EXPECT_NE(path.find(roberta::runtime::is_arm_level(plan.isa) ? "NEON" : "OpenBLAS"), std::string::npos) << path;
    return;
  }
  EXPECT_NE(path.find(plan.settings.bf16_attention ? "ROBERTA_ATTENTION"
                      : plan.isa < Isa::kAvx512Bf16 ? "no AVX512-BF16"
                                                    : "this CPU model's choice"),
            std::string::npos)
      << path;
}

TEST(Isa, UnknownRobertaIsaValueIsAnErrorNamingTheAcceptedOnes) {
  for (const char* bad : {"avx512x", "AVX2", "sse", ""})
    roberta::test::expect_error(
        [&] { roberta::runtime::parse_isa(bad); },
        {"ROBERTA_ISA", "amx", "avx512bf16", "avx512vnni", "avx512", "avxvnni", "avx2", "portable"});
  EXPECT_EQ(roberta::runtime::parse_isa("avx512"), Isa::kAvx512);
  EXPECT_EQ(roberta::runtime::parse_isa("avxvnni"), Isa::kAvxVnni);
  EXPECT_EQ(roberta::runtime::parse_isa("avx512vnni"), Isa::kAvx512Vnni);
  EXPECT_EQ(roberta::runtime::parse_isa("portable"), Isa::kPortable);
}

// Run by CTest with ROBERTA_ISA set to each level (and unset): the kernels must use exactly
// min(that level, what the CPU has) — for the fp32 GEMM and, separately, for the bf16 product.
// (Regression: ROBERTA_ISA=avx512 used to select the portable kernel, and any value disabled
// AVX512-BF16.)
TEST(Isa, KernelsUseTheLevelRobertaIsaAllows) {
  const char* env = std::getenv("ROBERTA_ISA");
  const Isa cpu = roberta::kernels::detected_isa();
  const Isa want = env && *env ? std::min(roberta::runtime::parse_isa(env), cpu) : cpu;
  std::printf("  ROBERTA_ISA=%s, CPU: %s, using: %s\n", env ? env : "(unset)", roberta::kernels::isa_name(cpu),
              roberta::kernels::isa_name(want));
  EXPECT_EQ(roberta::kernels::usable_isa(), want);
  const bool neon = roberta::runtime::is_arm_level(want);
  const char* fp32 = want >= Isa::kAvx512 ? "avx512" : want >= Isa::kAvx2 ? "avx2" : neon ? "neon" : "portable";
  EXPECT_STREQ(roberta::kernels::packed_gemm_isa(), fp32);
  const char* rows_env = std::getenv("ROBERTA_FP32_ROWS");
  // AVX-512 blocks: the CPU model's rows (runtime/cpu.h), unless ROBERTA_FP32_ROWS says
  const roberta::runtime::CpuChoices& model = *roberta::runtime::this_cpu().choices;
  size_t rows = model.fp32_block_rows;
  if (rows_env && *rows_env) rows = std::stoul(rows_env);
  // AVX2 and NEON: 6 (x 16, two passes); portable: 8
  if (want < Isa::kAvx512) rows = want >= Isa::kAvx2 || neon ? 6 : 8;
  EXPECT_EQ(roberta::kernels::packed_gemm_block_rows(), rows);
  // Panel prefetch: the CPU model's, unless ROBERTA_PREFETCH says
  const char* prefetch_env = std::getenv("ROBERTA_PREFETCH");
  std::string prefetch = prefetch_env && *prefetch_env ? prefetch_env : model.prefetch_next_slice ? "next" : "ahead";
  if (want < Isa::kAvx2) prefetch = "none";
  EXPECT_STREQ(roberta::kernels::packed_gemm_prefetch(), prefetch.c_str());
  EXPECT_EQ(roberta::kernels::has_bf16_instructions(), want >= Isa::kAvx512Bf16);
  // Without bf16 instructions the fp32 kernel runs bf16 on widened values.
  EXPECT_EQ(roberta::kernels::bf16_kernel_name(), want >= Isa::kAmx         ? std::string("AMX-BF16")
                                                  : want >= Isa::kAvx512Bf16 ? std::string("AVX512-BF16")
                                                  : want == Isa::kArmBf16    ? std::string("NEON-BF16")
                                                                             : std::string("widened to fp32, ") + fp32);
  // AVX-VNNI read from cpuid here (leaf 7, sub-leaf 1, EAX bit 4), not from the library.
  bool cpu_avx_vnni = false;
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  cpu_avx_vnni = __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4));
#endif
  if (cpu >= Isa::kAvx2 && cpu < Isa::kAvx512) {  // below AVX-512 the detected level says it
    EXPECT_EQ(cpu == Isa::kAvxVnni, cpu_avx_vnni);
  }
#if defined(__x86_64__)
  if (cpu >= Isa::kAvx512) {  // AVX512-VNNI: leaf 7, ECX bit 11
    c = 0;
    ASSERT_TRUE(__get_cpuid_count(7, 0, &a, &b, &c, &d));
    EXPECT_EQ(cpu >= Isa::kAvx512Vnni, (c & (1u << 11)) != 0);
  }
#endif
  std::printf("  CPU has AVX-VNNI: %s; int8 kernel: %s\n", cpu_avx_vnni ? "yes" : "no",
              roberta::kernels::int8_kernel_name());
  if (want >= Isa::kAmx)
    EXPECT_STREQ(roberta::kernels::int8_kernel_name(), "AMX-INT8");
  else if (want >= Isa::kAvx512Vnni && roberta::kernels::avx512_int8_kernels_built())
    EXPECT_STREQ(roberta::kernels::int8_kernel_name(), "AVX512-VNNI");
  else if (want == Isa::kAvx512 && roberta::kernels::avx512_int8_kernels_built())
    EXPECT_STREQ(roberta::kernels::int8_kernel_name(), "AVX512BW");
  else if (want >= Isa::kAvxVnni && cpu_avx_vnni && roberta::kernels::avx_vnni_kernel_built())
    EXPECT_STREQ(roberta::kernels::int8_kernel_name(), "AVX-VNNI");
  else if (neon)
    EXPECT_STREQ(roberta::kernels::int8_kernel_name(),
                 want >= Isa::kI8mm ? "NEON-I8MM" : want >= Isa::kDotProd ? "NEON-SDOT" : "portable");
  else
    EXPECT_STREQ(roberta::kernels::int8_kernel_name(), want >= Isa::kAvx2 ? "AVX2" : "portable");
  // The int8 kernels below AMX prefetch the next k slice as the fp32 kernel does; AMX and the
  // portable loop do not.
  const std::string int8_name = roberta::kernels::int8_kernel_name();
  EXPECT_EQ(roberta::kernels::int8_kernel_prefetches(),
            prefetch == "next" && int8_name != "AMX-INT8" && int8_name != "portable");
  // GELU and bf16 output in the epilogue: on AMX, and AVX512-VNNI's where AVX512-BF16 is allowed
  // and the CPU model's row asks for it.
  EXPECT_EQ(roberta::kernels::int8_kernel_fuses_epilogue(),
            want >= Isa::kAmx || (want >= Isa::kAvx512Bf16 && roberta::kernels::avx512_int8_kernels_built() &&
                                  model.int8_fused_epilogue));
}

}  // namespace
