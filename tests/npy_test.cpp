// .npy files: round trips and clear errors.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "roberta/dev/npy.h"
#include "test_util.h"

namespace {

using roberta::test::expect_error;
using roberta::test::TempDir;

TEST(Npy, RoundTripsFloatAndInt) {
  TempDir dir;
  const std::vector<float> f = {1.0f, -2.5f, 3.25f, 0.0f, 1e-30f, 7.0f};
  roberta::write_npy(dir / "f.npy", {2, 3}, f);
  const auto a = roberta::read_npy(dir / "f.npy");
  EXPECT_EQ(a.dtype, "<f4");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.as_float(), f);
  const std::vector<int64_t> i = {0, 31414, 232, 2};
  roberta::write_npy(dir / "i.npy", {4}, i);
  EXPECT_EQ(roberta::read_npy(dir / "i.npy").as_int64(), i);
  // Found by fuzzing: an empty array must not pass a null pointer to memcpy.
  roberta::write_npy(dir / "empty.npy", {0, 3}, std::vector<float>{});
  EXPECT_TRUE(roberta::read_npy(dir / "empty.npy").as_float().empty());
}

TEST(Npy, TruncatedOrBadFilesGiveClearErrors) {
  TempDir dir;
  roberta::write_npy(dir / "f.npy", {2, 3}, std::vector<float>(6, 1.0f));
  std::ifstream in(dir / "f.npy", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  roberta::test::write_text(dir / "t.npy", bytes.substr(0, bytes.size() - 4));
  expect_error([&] { roberta::read_npy(dir / "t.npy"); }, {"t.npy", "needs 24"});
  roberta::test::write_text(dir / "x.npy", "not numpy");
  expect_error([&] { roberta::read_npy(dir / "x.npy"); }, {"x.npy", "not a .npy"});
}

}  // namespace
