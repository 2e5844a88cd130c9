// WeightStore: one page-aligned allocation, names/shapes/bytes preserved, int8 and FP8 per-channel
// conversion of the LTX block linears vs a straightforward computation here (exact codes for chosen
// values, dequantisation error bounds for random ones), budget refusal.
#include "flow/host/weight_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

#include "support/alloc_counter.h"
#include "support/safetensors_writer.h"
#include "support/test_util.h"
#include "warpstream/numeric.h"

namespace ws::flow {
namespace {

using io::SafetensorsCheckpoint;
using test::SafetensorsSpec;
using test::TempDir;

uint32_t test_seed() {
  const char* s = std::getenv("WS_SEED");
  const uint32_t seed = s ? static_cast<uint32_t>(std::strtoul(s, nullptr, 10)) : std::random_device{}();
  std::printf("weight store test seed: %u (WS_SEED=%u reproduces)\n", seed, seed);
  return seed;
}

// bf16-representable random values (so the test's own reference sees exactly what the store reads).
std::vector<float> bf16_values(size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = bf16_to_float(float_to_bf16(d(rng)));
  return v;
}

constexpr const char* kQ = "transformer_blocks.0.attn1.to_q.weight";      // chosen values
constexpr const char* kQBias = "transformer_blocks.0.attn1.to_q.bias";
constexpr const char* kFf = "transformer_blocks.0.ff.net.2.weight";        // random, large
constexpr const char* kTable = "transformer_blocks.0.scale_shift_table";
constexpr const char* kNorm = "norm_out.weight";

// Row 0: absmax 127 -> int8 scale 1 (codes = RNE of the values); row 1: zeros; row 2: absmax 448
// -> fp8 scale 1 (codes = float_to_fp8_e4m3 of the values); row 3: ordinary.
const std::vector<float> kQValues = {
    127, -63.5, 0.5, 1.5, 2.5, -127, 64, -0.5,
    0, 0, 0, 0, 0, 0, 0, 0,
    448, -448, 1, 0.5, 17, -0.0078125, 240, 3,
    0.25, -1, 0.75, 2, -3, 0.125, 1.5, -0.5,
};

struct Fixture {
  TempDir dir;
  std::vector<float> ff;
  std::string path;
  explicit Fixture(uint32_t seed) {
    std::mt19937 rng(seed);
    ff = bf16_values(192 * 256, rng, 0.05f);
    ff[5] = bf16_to_float(float_to_bf16(0.9f));  // an outlier in row 0
    std::vector<SafetensorsSpec> specs = {
        {kQ, "BF16", {4, 8}, test::bf16_bytes(kQValues)},
        {kQBias, "BF16", {4}, test::bf16_bytes({1, 2, 3, 4})},
        {kFf, "BF16", {192, 256}, test::bf16_bytes(ff)},
        {kTable, "BF16", {6, 8}, test::bf16_bytes(std::vector<float>(48, 0.5f))},
        {kNorm, "F32", {8}, test::f32_bytes({1, 2, 3, 4, 5, 6, 7, 8})},
    };
    path = dir.file("model.safetensors");
    test::write_file(path, test::safetensors_image(specs));
  }
  SafetensorsCheckpoint open() const {
    Result<SafetensorsCheckpoint> c = io::open_checkpoint(path);
    EXPECT_TRUE(c.is_ok()) << c.status().to_string();
    return std::move(c).value();
  }
};

void expect_inside_and_aligned(const WeightStore& s) {
  const auto storage = s.storage();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(storage.data()) % static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)), 0u);
  EXPECT_EQ(storage.size() % static_cast<size_t>(::sysconf(_SC_PAGESIZE)), 0u);
  uint64_t prev_end = 0;
  for (const StoredTensor& t : s.tensors()) {  // laid out in load order, no overlap
    EXPECT_EQ(t.offset % WeightStore::kAlignment, 0u) << t.name;
    EXPECT_EQ(t.data, storage.data() + t.offset) << t.name;
    EXPECT_GE(t.offset, prev_end) << t.name;
    EXPECT_LE(t.offset + t.bytes, storage.size()) << t.name;
    prev_end = t.offset + t.bytes;
    if (t.scales != nullptr) {
      EXPECT_EQ(t.scales_offset % WeightStore::kAlignment, 0u);
      EXPECT_EQ(reinterpret_cast<const std::byte*>(t.scales), storage.data() + t.scales_offset);
      EXPECT_GE(t.scales_offset, prev_end);
      prev_end = t.scales_offset + static_cast<uint64_t>(t.shape[0]) * 4;
      EXPECT_LE(prev_end, storage.size());
    }
  }
}

TEST(WeightStore, AsStoredKeepsNamesShapesAndBytesInOneAllocation) {
  Fixture fx(test_seed());
  SafetensorsCheckpoint c = fx.open();
  test::AllocationScope scope;
  Result<WeightStore> r = WeightStore::load(c);
  const uint64_t heap_bytes = scope.bytes();
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const WeightStore& s = *r;
  ASSERT_EQ(s.tensors().size(), 5u);
  // The tensor bytes (~100 KB) are not in the heap: only the bookkeeping is.
  EXPECT_LT(heap_bytes, 8192u);
  EXPECT_GE(s.storage().size(), 192u * 256 * 2);
  for (const io::CheckpointTensor& src : c.tensors()) {
    const StoredTensor* t = s.find(src.tensor->name);
    ASSERT_NE(t, nullptr) << src.tensor->name;
    EXPECT_EQ(t->dtype, src.tensor->dtype);
    EXPECT_EQ(t->source_dtype, src.tensor->dtype);
    EXPECT_EQ(t->shape, src.tensor->shape);
    EXPECT_EQ(t->scales, nullptr);
    ASSERT_EQ(t->bytes, src.bytes.size());
    EXPECT_EQ(std::memcmp(t->data, src.bytes.data(), t->bytes), 0) << t->name;
  }
  expect_inside_and_aligned(s);
  EXPECT_EQ(s.find("absent"), nullptr);
  EXPECT_EQ(s.get("absent").status().code(), StatusCode::kNotFound);
  const int64_t want[] = {4, 8};
  EXPECT_TRUE(s.get(kQ, want).is_ok());
  const int64_t wrong[] = {8, 4};
  Status bad = s.get(kQ, wrong).status();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidModel);
  EXPECT_NE(bad.message().find("[4, 8], expected [8, 4]"), std::string::npos) << bad.message();
}

TEST(WeightStore, Int8PerChannel) {
  Fixture fx(test_seed());
  SafetensorsCheckpoint c = fx.open();
  WeightStoreOptions o;
  o.format = WeightFormat::kInt8;
  Result<WeightStore> r = WeightStore::load(c, o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_inside_and_aligned(*r);

  const StoredTensor& q = **r->get(kQ);
  EXPECT_EQ(q.dtype, DType::kInt8);
  EXPECT_EQ(q.source_dtype, DType::kBFloat16);
  EXPECT_EQ(q.shape, (Shape{4, 8}));
  EXPECT_EQ(q.bytes, 32u);
  ASSERT_NE(q.scales, nullptr);
  // Row 0: scale 127/127 = 1; RNE: -63.5 -> -64, 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> 0.
  EXPECT_EQ(q.scales[0], 1.0f);
  const int8_t row0[] = {127, -64, 0, 2, 2, -127, 64, 0};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(q.data_as<int8_t>()[i], row0[i]) << "row 0 col " << i;
  // Row 1: all zero -> scale 1, codes 0.
  EXPECT_EQ(q.scales[1], 1.0f);
  for (int i = 8; i < 16; ++i) EXPECT_EQ(q.data_as<int8_t>()[i], 0);
  // Row 2: absmax 448 -> scale 448/127; 448 -> 127, -448 -> -127, 240 -> RNE(240*127/448) = 68.
  EXPECT_EQ(q.scales[2], 448.0f / 127.0f);
  EXPECT_EQ(q.data_as<int8_t>()[16], 127);
  EXPECT_EQ(q.data_as<int8_t>()[17], -127);
  EXPECT_EQ(q.data_as<int8_t>()[22], 68);

  // The random weight: against the straightforward computation, and the dequantisation bound.
  const StoredTensor& ff = **r->get(kFf);
  ASSERT_NE(ff.scales, nullptr);
  for (int row = 0; row < 192; ++row) {
    float absmax = 0;
    for (int k = 0; k < 256; ++k) absmax = std::max(absmax, std::fabs(fx.ff[row * 256 + k]));
    const float scale = absmax / 127.0f;
    ASSERT_EQ(ff.scales[row], scale) << "row " << row;
    for (int k = 0; k < 256; ++k) {
      const float w = fx.ff[row * 256 + k];
      const int want = static_cast<int>(std::max(-127.0f, std::min(127.0f, std::nearbyint(w / scale))));
      const int got = ff.data_as<int8_t>()[row * 256 + k];
      ASSERT_EQ(got, want) << "row " << row << " col " << k << " w " << w << " scale " << scale;
      ASSERT_LE(std::fabs(got * scale - w), 0.5f * scale * 1.0001f) << "row " << row << " col " << k;
    }
  }
  // Not selected: bias, table, norm stay as stored.
  EXPECT_EQ((*r->get(kQBias))->dtype, DType::kBFloat16);
  EXPECT_EQ((*r->get(kQBias))->scales, nullptr);
  EXPECT_EQ((*r->get(kTable))->dtype, DType::kBFloat16);
  EXPECT_EQ((*r->get(kNorm))->dtype, DType::kFloat32);
  EXPECT_EQ((*r->get(kNorm))->data_as<float>()[7], 8.0f);
}

TEST(WeightStore, Fp8PerChannel) {
  Fixture fx(test_seed());
  SafetensorsCheckpoint c = fx.open();
  WeightStoreOptions o;
  o.format = WeightFormat::kFp8E4M3;
  Result<WeightStore> r = WeightStore::load(c, o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_inside_and_aligned(*r);
  const StoredTensor& q = **r->get(kQ);
  EXPECT_EQ(q.dtype, DType::kFloat8E4M3FN);
  ASSERT_NE(q.scales, nullptr);
  // Row 2: absmax 448 -> scale 1: codes are the values' own e4m3 codes.
  EXPECT_EQ(q.scales[2], 1.0f);
  // 448, -448, 1, 0.5, 17 -> 16 (tie to the even code), -2^-7 = -4 * 2^-9 (subnormal), 240, 3.
  const uint8_t expected[] = {0x7E, 0xFE, 0x38, 0x30, 0x58, 0x84, 0x77, 0x44};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(q.data_as<uint8_t>()[16 + i], expected[i]) << "row 2 col " << i;
  EXPECT_EQ(q.scales[1], 1.0f);
  for (int i = 8; i < 16; ++i) EXPECT_EQ(q.data_as<uint8_t>()[i], 0);
  // Row 0: absmax 127 -> scale 127/448; 127 -> 448 exactly (code 0x7E).
  EXPECT_EQ(q.scales[0], 127.0f / 448.0f);
  EXPECT_EQ(q.data_as<uint8_t>()[0], 0x7E);
  EXPECT_EQ(q.data_as<uint8_t>()[5], 0xFE);

  const StoredTensor& ff = **r->get(kFf);
  for (int row = 0; row < 192; ++row) {
    float absmax = 0;
    for (int k = 0; k < 256; ++k) absmax = std::max(absmax, std::fabs(fx.ff[row * 256 + k]));
    const float scale = absmax / 448.0f;
    ASSERT_EQ(ff.scales[row], scale) << "row " << row;
    for (int k = 0; k < 256; ++k) {
      const float w = fx.ff[row * 256 + k];
      const uint8_t got = ff.data_as<uint8_t>()[row * 256 + k];
      ASSERT_EQ(got, float_to_fp8_e4m3(w / scale)) << "row " << row << " col " << k;
      // 3 mantissa bits, RNE: relative error <= 2^-4 for normals; absolute <= 2^-10 * scale below 2^-6.
      const float deq = fp8_e4m3_to_float(got) * scale;
      const float bound = std::max(std::fabs(w) / 16.0f, std::ldexp(scale, -10)) * 1.001f;
      ASSERT_LE(std::fabs(deq - w), bound) << "row " << row << " col " << k << " w " << w;
    }
  }
  EXPECT_EQ((*r->get(kQBias))->dtype, DType::kBFloat16);
}

TEST(WeightStore, ThreadCountDoesNotChangeTheStore) {
  Fixture fx(test_seed());
  SafetensorsCheckpoint c = fx.open();
  for (WeightFormat f : {WeightFormat::kAsStored, WeightFormat::kInt8, WeightFormat::kFp8E4M3}) {
    WeightStoreOptions one, many;
    one.format = many.format = f;
    one.threads = 1;
    many.threads = 4;
    Result<WeightStore> a = WeightStore::load(c, one);
    Result<WeightStore> b = WeightStore::load(c, many);
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    ASSERT_EQ(a->storage().size(), b->storage().size());
    EXPECT_EQ(std::memcmp(a->storage().data(), b->storage().data(), a->storage().size()), 0) << weight_format_name(f);
  }
}

TEST(WeightStore, NamedSubsetAndPredicate) {
  Fixture fx(test_seed());
  SafetensorsCheckpoint c = fx.open();
  const std::vector<std::string> names = {kNorm, kQ};
  Result<WeightStore> r = WeightStore::load(c, names);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->tensors().size(), 2u);
  EXPECT_EQ(r->tensors()[0].name, kNorm);  // in the requested order
  EXPECT_EQ(r->tensors()[1].name, kQ);
  EXPECT_EQ(r->find(kFf), nullptr);

  WeightStoreOptions o;
  o.select = [](const io::SafetensorsTensor& t) { return t.dtype == DType::kBFloat16; };
  Result<WeightStore> bf = WeightStore::load(c, o);
  ASSERT_TRUE(bf.is_ok());
  EXPECT_EQ(bf->tensors().size(), 4u);
  EXPECT_EQ(bf->find(kNorm), nullptr);

  const std::vector<std::string> missing = {kQ, "nope"};
  Status m = WeightStore::load(c, missing).status();
  EXPECT_EQ(m.code(), StatusCode::kNotFound);
  EXPECT_NE(m.message().find("'nope'"), std::string::npos) << m.message();
  const std::vector<std::string> twice = {kQ, kNorm, kQ};
  Status t = WeightStore::load(c, twice).status();
  EXPECT_EQ(t.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.message().find("requested twice"), std::string::npos) << t.message();
}

TEST(WeightStore, BudgetRefusalNamesBothNumbers) {
  Fixture fx(test_seed());
  SafetensorsCheckpoint c = fx.open();
  WeightStoreOptions o;
  o.max_host_bytes = 64 * 1024;
  test::AllocationScope scope;
  Status s = WeightStore::load(c, o).status();
  EXPECT_LT(scope.bytes(), 8192u);
  ASSERT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  // 5 tensors: 64 B, 8 B, 98304 B, 96 B, 32 B, each at a 256-B boundary -> 99,104 B, rounded to pages.
  const uint64_t need = (256 + 256 + 98304 + 256 + 32 + page - 1) / page * page;
  EXPECT_NE(s.message().find("need " + std::to_string(need) + " bytes"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("host bound of 65536 bytes"), std::string::npos) << s.message();
  o.max_host_bytes = need;
  EXPECT_TRUE(WeightStore::load(c, o).is_ok());
}

TEST(WeightStore, ConversionErrors) {
  Fixture fx(test_seed());
  SafetensorsCheckpoint c = fx.open();
  WeightStoreOptions o;
  o.format = WeightFormat::kInt8;
  o.quantize = [](const io::SafetensorsTensor& t) { return t.name == kQBias; };  // 1-D: refused
  Status s = WeightStore::load(c, o).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'transformer_blocks.0.attn1.to_q.bias' (bfloat16 [4])"), std::string::npos) << s.message();

  TempDir dir;
  std::vector<float> w(16, 1.0f);
  w[9] = std::numeric_limits<float>::infinity();
  const std::string path = dir.file("inf.safetensors");
  test::write_file(path, test::safetensors_image({{kQ, "F32", {2, 8}, test::f32_bytes(w)}}));
  Result<SafetensorsCheckpoint> ck = io::open_checkpoint(path);
  ASSERT_TRUE(ck.is_ok());
  WeightStoreOptions f8;
  f8.format = WeightFormat::kFp8E4M3;
  Status inf = WeightStore::load(*ck, f8).status();
  EXPECT_EQ(inf.code(), StatusCode::kInvalidModel);
  EXPECT_NE(inf.message().find("element [1, 1] is inf"), std::string::npos) << inf.message();
}

TEST(WeightStore, SubnormalRowsWhoseScaleUnderflowsQuantiseToZero) {
  // Fuzzer finding: absmax = 1e-44 gives absmax / 127 == 0 and w / 0 = NaN (UB in the int8 cast).
  TempDir dir;
  const float tiny = std::numeric_limits<float>::denorm_min() * 7;  // ~1e-44
  const std::vector<float> w = {tiny, -tiny, 0, tiny, 1, -0.5f, 0.25f, 0};
  const std::string path = dir.file("tiny.safetensors");
  test::write_file(path, test::safetensors_image({{kQ, "F32", {2, 4}, test::f32_bytes(w)}}));
  Result<SafetensorsCheckpoint> ck = io::open_checkpoint(path);
  ASSERT_TRUE(ck.is_ok());
  for (WeightFormat f : {WeightFormat::kInt8, WeightFormat::kFp8E4M3}) {
    WeightStoreOptions o;
    o.format = f;
    Result<WeightStore> s = WeightStore::load(*ck, o);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    const StoredTensor& t = **s->get(kQ);
    EXPECT_EQ(t.scales[0], 1.0f) << weight_format_name(f);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(t.data_as<uint8_t>()[i] & 0x7F, 0) << weight_format_name(f) << " col " << i;
    EXPECT_EQ(t.scales[1], f == WeightFormat::kInt8 ? 1.0f / 127.0f : 1.0f / 448.0f);
    EXPECT_EQ(t.data_as<uint8_t>()[4], f == WeightFormat::kInt8 ? 127 : 0x7E);
  }
}

TEST(WeightStore, LtxBlockLinearNames) {
  for (const char* yes : {"transformer_blocks.0.attn1.to_q.weight", "transformer_blocks.27.attn2.to_out.0.weight",
                          "transformer_blocks.3.ff.net.0.proj.weight", "transformer_blocks.3.ff.net.2.weight",
                          "model.transformer_blocks.1.attn1.to_v.weight", "transformer_blocks.1.attn2.to_k.weight"})
    EXPECT_TRUE(is_ltx_block_linear_weight(yes)) << yes;
  for (const char* no : {"transformer_blocks.0.attn1.to_q.bias", "transformer_blocks.0.attn1.norm_q.weight",
                         "transformer_blocks.0.scale_shift_table", "transformer_blocks.0.ff.net.0.proj.bias",
                         "proj_in.weight", "caption_projection.linear_1.weight", "transformer_blocks.x.attn1.to_q.weight",
                         "transformer_blocks..attn1.to_q.weight", "my_transformer_blocks.0.attn1.to_q.weight",
                         "transformer_blocks.0.attn1.to_out.1.weight", "transformer_blocks.0.attn1.to_q.weight.extra"})
    EXPECT_FALSE(is_ltx_block_linear_weight(no)) << no;
  EXPECT_EQ(*parse_weight_format("fp8"), WeightFormat::kFp8E4M3);
  EXPECT_EQ(*parse_weight_format("bf16"), WeightFormat::kAsStored);
  EXPECT_EQ(parse_weight_format("fp4").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ws::flow
