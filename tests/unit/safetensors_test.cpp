// safetensors reader: a valid round trip and every malformed-header case of issue 11 item 1, each
// refused with exactly one error that names the file, the tensor and the numbers; allocation bounds.
#include "warpstream/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fcntl.h>

#include "support/alloc_counter.h"
#include "support/safetensors_writer.h"
#include "support/test_util.h"

namespace ws::io {
namespace {

using test::safetensors_image;
using test::safetensors_raw;
using test::SafetensorsSpec;
using test::TempDir;

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// Parses `image` from memory AND from a file; both must agree. Returns the in-memory result's status.
Status parse_both(const std::string& image, const SafetensorsLimits& limits = {}) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  test::write_file(path, image);
  Result<SafetensorsFile> from_file = SafetensorsFile::open(path, limits);
  Result<SafetensorsFile> from_memory = SafetensorsFile::parse(as_bytes(image), "mem.safetensors", limits);
  EXPECT_EQ(from_file.status().code(), from_memory.status().code()) << from_file.status().to_string();
  if (!from_file.is_ok()) {
    EXPECT_NE(from_file.status().message().find(path), std::string::npos)
        << "error must name the file: " << from_file.status().message();
  }
  return from_memory.status();
}

// One error, naming everything in `needles`, with no raw control characters.
void expect_one_error(const Status& s, StatusCode code, std::initializer_list<std::string> needles) {
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), code) << s.to_string();
  for (const std::string& n : needles) EXPECT_NE(s.message().find(n), std::string::npos) << "missing '" << n << "' in: " << s.message();
  for (char c : s.message()) EXPECT_GE(static_cast<unsigned char>(c), 0x20) << "raw control byte in: " << s.message();
}

// A header with one entry `name` = `entry` (raw JSON text) and `data` bytes of data.
std::string one_entry(const std::string& entry, size_t data = 48, const std::string& name = "w") {
  return safetensors_raw("{\"" + name + "\":" + entry + "}", data);
}

TEST(Safetensors, ValidFileRoundTrip) {
  std::vector<float> f32 = {1.0f, -2.5f, 3.25f, 0.0f, 1e-3f, -7.0f};
  std::vector<SafetensorsSpec> specs = {
      {"blocks.0.weight", "F32", {2, 3}, test::f32_bytes(f32)},
      {"blocks.0.bf16", "BF16", {3}, test::bf16_bytes({1.0f, -0.5f, 256.0f})},
      {"i8", "I8", {4}, {0x80, 0x7F, 0x00, 0xFF}},
      {"u8", "U8", {2}, {1, 2}},
      {"fp8", "F8_E4M3", {2}, {0x7E, 0x38}},
      {"f16", "F16", {1}, {0x00, 0x3C}},
      {"scalar", "F32", {}, test::f32_bytes({42.0f})},
      {"empty", "F32", {0, 3}, {}},
      {"i64", "I64", {1}, {5, 0, 0, 0, 0, 0, 0, 0}},
  };
  const std::string image = safetensors_image(specs, {{"format", "pt"}, {"note", "tiny"}});
  TempDir dir;
  const std::string path = dir.file("ok.safetensors");
  test::write_file(path, image);
  Result<SafetensorsFile> r = SafetensorsFile::open(path);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const SafetensorsFile& f = *r;
  EXPECT_EQ(f.path(), path);
  ASSERT_EQ(f.tensors().size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const SafetensorsTensor& t = f.tensors()[i];
    EXPECT_EQ(t.name, specs[i].name) << "header order is kept";
    EXPECT_EQ(safetensors_dtype_name(t.dtype), specs[i].dtype);
    EXPECT_EQ(t.shape, specs[i].shape);
    const SafetensorsTensor* found = f.find(specs[i].name);
    ASSERT_EQ(found, &t);
    std::span<const std::byte> b = f.bytes(t);
    ASSERT_EQ(b.size(), specs[i].data.size());
    if (!b.empty()) EXPECT_EQ(std::memcmp(b.data(), specs[i].data.data(), b.size()), 0) << t.name;
  }
  EXPECT_EQ(f.find("missing"), nullptr);
  EXPECT_EQ(f.find("blocks.0"), nullptr);
  EXPECT_EQ(f.tensors()[0].dtype, DType::kFloat32);
  EXPECT_EQ(f.tensors()[1].dtype, DType::kBFloat16);
  EXPECT_EQ(f.tensors()[4].dtype, DType::kFloat8E4M3FN);
  EXPECT_EQ(f.tensors()[6].elements(), 1);
  EXPECT_EQ(f.tensors()[7].elements(), 0);
  float w1;
  std::memcpy(&w1, f.bytes(f.tensors()[0]).data() + 4, 4);
  EXPECT_EQ(w1, -2.5f);
  EXPECT_EQ(f.metadata().size(), 2u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.header_bytes() % 8, 0u);
  EXPECT_EQ(f.data_bytes(), image.size() - 8 - f.header_bytes());

  // The same image from memory, and after a move (views stay valid: the mapping moves with it).
  Result<SafetensorsFile> m = SafetensorsFile::parse(as_bytes(image), "mem");
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(m->tensors().size(), specs.size());
  SafetensorsFile moved = std::move(r).value();
  EXPECT_EQ(std::memcmp(moved.bytes(*moved.find("u8")).data(), "\x01\x02", 2), 0);
}

TEST(Safetensors, EmptyHeaderObjectAndGapsAreValid) {
  EXPECT_TRUE(parse_both(safetensors_raw("{}", 0)).is_ok());
  // A gap between tensors (bytes 4..8 unused) is allowed; overlap is not (below).
  EXPECT_TRUE(parse_both(safetensors_raw(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 12)).is_ok());
  // Trailing spaces after the JSON (the reference writer pads to 8 bytes).
  EXPECT_TRUE(parse_both(safetensors_raw("{}      ", 0)).is_ok());
}

TEST(Safetensors, EmptyFile) {
  expect_one_error(parse_both(""), StatusCode::kInvalidModel, {"mem.safetensors", "is 0 bytes", "8-byte"});
}

TEST(Safetensors, ShorterThanTheLengthField) {
  expect_one_error(parse_both(std::string("\x02\x00\x00", 3)), StatusCode::kInvalidModel, {"is 3 bytes"});
}

TEST(Safetensors, HeaderLengthPastEndOfFile) {
  expect_one_error(parse_both(safetensors_raw("{}", 0, 3)), StatusCode::kInvalidModel,
                   {"header length 3", "runs past the end", "10 bytes"});
  expect_one_error(parse_both(safetensors_raw("{}", 0, ~uint64_t{0})), StatusCode::kInvalidModel,
                   {"header length 18446744073709551615", "runs past the end"});
}

TEST(Safetensors, HeaderLengthAboveLimit) {
  SafetensorsLimits small;
  small.max_header_bytes = 16;
  const std::string image = safetensors_raw("{}                   ", 0);  // 21-byte header
  expect_one_error(parse_both(image, small), StatusCode::kResourceExhausted,
                   {"header length 21", "limit of 16", "max_header_bytes"});
}

TEST(Safetensors, DefaultLimitIs100MBOnASparseFile) {
  // A 150 MB sparse file whose length field claims 100'000'001 header bytes: refused by the
  // default bound before anything is read or allocated.
  TempDir dir;
  const std::string path = dir.file("huge.safetensors");
  test::write_file(path, test::le64(100'000'001) + "{");
  ASSERT_EQ(::truncate(path.c_str(), 150'000'000), 0);
  test::AllocationScope scope;
  Result<SafetensorsFile> r = SafetensorsFile::open(path);
  const uint64_t bytes = scope.bytes();
  expect_one_error(r.status(), StatusCode::kResourceExhausted, {"100000001", "limit of 100000000"});
  EXPECT_LT(bytes, 4096u) << "the refusal must come before any allocation proportional to the claim";
}

TEST(Safetensors, NotJson) {
  expect_one_error(parse_both(safetensors_raw("{\"w\": nope}", 0)), StatusCode::kInvalidModel,
                   {"not valid JSON", "header byte"});
  expect_one_error(parse_both(safetensors_raw("", 0)), StatusCode::kInvalidModel, {"not valid JSON"});
  expect_one_error(parse_both(safetensors_raw("{} x", 0)), StatusCode::kInvalidModel, {"not valid JSON"});
  // Invalid UTF-8 in a string.
  expect_one_error(parse_both(safetensors_raw("{\"\xff\":1}", 0)), StatusCode::kInvalidModel, {"not valid JSON"});
}

TEST(Safetensors, NotAnObject) {
  expect_one_error(parse_both(safetensors_raw("[]", 0)), StatusCode::kInvalidModel, {"must be a JSON object", "an array"});
  expect_one_error(parse_both(safetensors_raw("\"x\"", 0)), StatusCode::kInvalidModel, {"must be a JSON object", "a string"});
  expect_one_error(parse_both(safetensors_raw("7", 0)), StatusCode::kInvalidModel, {"must be a JSON object"});
  expect_one_error(parse_both(safetensors_raw("null", 0)), StatusCode::kInvalidModel, {"must be a JSON object", "null"});
}

TEST(Safetensors, EntryNotAnObject) {
  expect_one_error(parse_both(one_entry("[1,2]")), StatusCode::kInvalidModel, {"tensor 'w'", "must be an object", "an array"});
  expect_one_error(parse_both(one_entry("3")), StatusCode::kInvalidModel, {"tensor 'w'", "must be an object"});
}

TEST(Safetensors, MissingFields) {
  expect_one_error(parse_both(one_entry(R"({"shape":[12],"data_offsets":[0,48]})")), StatusCode::kInvalidModel,
                   {"tensor 'w'", "missing field 'dtype'"});
  expect_one_error(parse_both(one_entry(R"({"dtype":"F32","data_offsets":[0,48]})")), StatusCode::kInvalidModel,
                   {"tensor 'w'", "missing field 'shape'"});
  expect_one_error(parse_both(one_entry(R"({"dtype":"F32","shape":[12]})")), StatusCode::kInvalidModel,
                   {"tensor 'w'", "missing field 'data_offsets'"});
}

TEST(Safetensors, WrongTypedFields) {
  struct Case { const char* entry; const char* needle; };
  const Case cases[] = {
      {R"({"dtype":5,"shape":[12],"data_offsets":[0,48]})", "field 'dtype' must be a string, got an integer"},
      {R"({"dtype":["F32"],"shape":[12],"data_offsets":[0,48]})", "field 'dtype' must be a string, got an array"},
      {R"({"dtype":"F32","shape":"12","data_offsets":[0,48]})", "field 'shape' must be an array of integers, got a string"},
      {R"({"dtype":"F32","shape":{},"data_offsets":[0,48]})", "field 'shape' must be an array of integers, got an object"},
      {R"({"dtype":"F32","shape":[12.5],"data_offsets":[0,48]})", "shape dim 0 is 12.5"},
      {R"({"dtype":"F32","shape":[3,"4"],"data_offsets":[0,48]})", "shape dim 1 must be an integer, got a string"},
      {R"({"dtype":"F32","shape":[[12]],"data_offsets":[0,48]})", "shape dim 0 must be an integer, got an array"},
      {R"({"dtype":"F32","shape":[12],"data_offsets":{"a":0}})", "field 'data_offsets' must be an array"},
      {R"({"dtype":"F32","shape":[12],"data_offsets":[0]})", "data_offsets has 1 entries"},
      {R"({"dtype":"F32","shape":[12],"data_offsets":[0,48,96]})", "data_offsets has more than 2 entries"},
      {R"({"dtype":"F32","shape":[12],"data_offsets":[0,true]})", "data_offsets[1] must be an integer, got a boolean"},
      {R"({"dtype":"F32","shape":[12],"data_offsets":[0,4.8e1]})", "data_offsets[1] is 4.8e1"},
      {R"({"dtype":"F32","shape":[12],"data_offsets":[-1,48]})", "data_offsets[0] is -1"},
      {R"({"dtype":"F32","shape":[12],"data_offsets":[0,48],"extra":1})", "unknown field 'extra'"},
      {R"({"dtype":"F32","dtype":"F32","shape":[12],"data_offsets":[0,48]})", "field 'dtype' appears twice"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.entry);
    expect_one_error(parse_both(one_entry(c.entry)), StatusCode::kInvalidModel, {"tensor 'w'", c.needle});
  }
}

TEST(Safetensors, MetadataMustBeStrings) {
  expect_one_error(parse_both(safetensors_raw(R"({"__metadata__":{"a":1}})", 0)), StatusCode::kInvalidModel,
                   {"__metadata__ value for 'a' must be a string, got an integer"});
  expect_one_error(parse_both(safetensors_raw(R"({"__metadata__":[]})", 0)), StatusCode::kInvalidModel,
                   {"\"__metadata__\" must be an object of strings, got an array"});
  expect_one_error(parse_both(safetensors_raw(R"({"__metadata__":{"a":"x","a":"y"}})", 0)), StatusCode::kInvalidModel,
                   {"__metadata__ key 'a' appears twice"});
  expect_one_error(parse_both(safetensors_raw(R"({"__metadata__":{},"__metadata__":{}})", 0)), StatusCode::kInvalidModel,
                   {"\"__metadata__\" appears twice"});
}

TEST(Safetensors, UnknownAndUnsupportedDtypes) {
  expect_one_error(parse_both(one_entry(R"({"dtype":"F9","shape":[12],"data_offsets":[0,48]})")), StatusCode::kInvalidModel,
                   {"tensor 'w'", "unknown dtype 'F9'"});
  expect_one_error(parse_both(one_entry(R"({"dtype":"f32","shape":[12],"data_offsets":[0,48]})")), StatusCode::kInvalidModel,
                   {"unknown dtype 'f32'"});
  expect_one_error(parse_both(one_entry(R"({"dtype":"F8_E5M2","shape":[48],"data_offsets":[0,48]})")), StatusCode::kUnsupported,
                   {"tensor 'w'", "dtype 'F8_E5M2' is not supported"});
}

TEST(Safetensors, NegativeDim) {
  expect_one_error(parse_both(one_entry(R"({"dtype":"F32","shape":[3,-4],"data_offsets":[0,48]})")), StatusCode::kInvalidModel,
                   {"tensor 'w'", "shape dim 1 is -4", ">= 0"});
}

TEST(Safetensors, ShapeProductOverflow) {
  // 2^32 * 2^32 elements: the element count overflows.
  expect_one_error(parse_both(one_entry(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,48]})")),
                   StatusCode::kInvalidModel, {"tensor 'w'", "[4294967296, 4294967296]", "overflows"});
  // 2^62 elements fit, x 4 bytes does not.
  expect_one_error(parse_both(one_entry(R"({"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,48]})")),
                   StatusCode::kInvalidModel, {"tensor 'w'", "overflows"});
  // A dim above int64.
  expect_one_error(parse_both(one_entry(R"({"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,48]})")),
                   StatusCode::kInvalidModel, {"tensor 'w'", "18446744073709551615"});
  // A dim past uint64 (nlohmann turns it into a float).
  expect_one_error(parse_both(one_entry(R"({"dtype":"U8","shape":[99999999999999999999],"data_offsets":[0,48]})")),
                   StatusCode::kInvalidModel, {"tensor 'w'", "99999999999999999999"});
}

TEST(Safetensors, RankLimit) {
  SafetensorsLimits l;
  l.max_rank = 2;
  expect_one_error(parse_both(one_entry(R"({"dtype":"U8","shape":[1,1,48],"data_offsets":[0,48]})"), l),
                   StatusCode::kResourceExhausted, {"tensor 'w'", "more than 2 dims"});
}

TEST(Safetensors, OffsetsOutsideData) {
  expect_one_error(parse_both(one_entry(R"({"dtype":"F32","shape":[12],"data_offsets":[4,52]})", 48)),
                   StatusCode::kInvalidModel, {"tensor 'w'", "[4, 52]", "runs past the data section (48 bytes)"});
}

TEST(Safetensors, BeginAfterEnd) {
  expect_one_error(parse_both(one_entry(R"({"dtype":"F32","shape":[0],"data_offsets":[40,8]})", 48)),
                   StatusCode::kInvalidModel, {"tensor 'w'", "[40, 8]", "begin > end"});
}

TEST(Safetensors, SizeMismatch) {
  expect_one_error(parse_both(one_entry(R"({"dtype":"BF16","shape":[4,3],"data_offsets":[0,48]})", 48)),
                   StatusCode::kInvalidModel, {"tensor 'w'", "[0, 48]", "hold 48 bytes", "BF16 [4, 3]", "12 x 2 = 24"});
}

TEST(Safetensors, OverlappingTensors) {
  const std::string h = R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                        R"("b":{"dtype":"F32","shape":[4],"data_offsets":[32,48]},)"
                        R"("c":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})";
  expect_one_error(parse_both(safetensors_raw(h, 48)), StatusCode::kInvalidModel,
                   {"'a' [0, 16)", "'c' [8, 24)", "overlap"});
  // Identical ranges overlap too; empty ranges overlap nothing.
  const std::string same = R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                           R"("b":{"dtype":"U8","shape":[16],"data_offsets":[0,16]}})";
  expect_one_error(parse_both(safetensors_raw(same, 16)), StatusCode::kInvalidModel, {"'a' [0, 16)", "'b' [0, 16)", "overlap"});
  const std::string empty = R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                            R"("e":{"dtype":"F32","shape":[0],"data_offsets":[8,8]}})";
  EXPECT_TRUE(parse_both(safetensors_raw(empty, 16)).is_ok());
}

TEST(Safetensors, DuplicateNames) {
  // nlohmann's DOM would keep the last; the SAX reader sees both.
  const std::string h = R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                        R"("x":{"dtype":"F32","shape":[4],"data_offsets":[16,32]},)"
                        R"("w":{"dtype":"F32","shape":[4],"data_offsets":[32,48]}})";
  expect_one_error(parse_both(safetensors_raw(h, 48)), StatusCode::kInvalidModel,
                   {"tensor 'w' appears twice", "entries 0 and 2"});
}

TEST(Safetensors, TruncatedFile) {
  std::vector<SafetensorsSpec> specs = {{"a", "F32", {8}, test::f32_bytes(std::vector<float>(8, 1.0f))},
                                        {"b", "F32", {8}, test::f32_bytes(std::vector<float>(8, 2.0f))}};
  const std::string image = safetensors_image(specs);
  ASSERT_TRUE(parse_both(image).is_ok());
  // Cut inside the data: the last tensor's offsets run past the (now shorter) data section.
  expect_one_error(parse_both(image.substr(0, image.size() - 5)), StatusCode::kInvalidModel,
                   {"tensor 'b'", "[32, 64]", "runs past the data section (59 bytes)"});
  // Cut inside the header.
  expect_one_error(parse_both(image.substr(0, 20)), StatusCode::kInvalidModel, {"runs past the end of the file (20 bytes"});
}

TEST(Safetensors, NamesAreEscapedInMessages) {
  const std::string name = "evil\x1b[2J\nname'\\";
  nlohmann::json j = name;  // JSON-escape the key
  const std::string h = "{" + j.dump() + R"(:{"dtype":"F32","shape":[5],"data_offsets":[0,48]}})";
  Status s = parse_both(safetensors_raw(h, 48));
  expect_one_error(s, StatusCode::kInvalidModel, {"evil\\x1b[2J\\x0aname'\\", "hold 48 bytes"});
  EXPECT_EQ(escape_for_message("a\x01\xff"), "a\\x01\\xff");
  EXPECT_EQ(escape_for_message("plain.name_0"), "plain.name_0");
}

TEST(Safetensors, NotAFile) {
  TempDir dir;
  Result<SafetensorsFile> missing = SafetensorsFile::open(dir.file("nope.safetensors"));
  expect_one_error(missing.status(), StatusCode::kNotFound, {"nope.safetensors", "No such file"});
  Result<SafetensorsFile> directory = SafetensorsFile::open(dir.path().string());
  expect_one_error(directory.status(), StatusCode::kInvalidArgument, {"not a regular file", "open_checkpoint"});
}

TEST(Safetensors, LyingOffsetsAllocateNothingProportional) {
  // Offsets promising 2^60 bytes on a 48-byte data section.
  const std::string image = one_entry(R"({"dtype":"U8","shape":[1152921504606846976],"data_offsets":[0,1152921504606846976]})");
  test::reset_largest_allocation();
  test::AllocationScope scope;
  Result<SafetensorsFile> r = SafetensorsFile::parse(as_bytes(image), "lying");
  const uint64_t bytes = scope.bytes();
  expect_one_error(r.status(), StatusCode::kInvalidModel, {"tensor 'w'", "runs past the data section (48 bytes)"});
  EXPECT_LT(bytes, 16384u);
  EXPECT_LT(test::largest_allocation(), 4096u);
}

TEST(Safetensors, ParserMemoryIsBoundedByTheHeaderLimit) {
  // Many tiny valid entries: their in-memory form (name, shape, entry, index: ~120 B each) is
  // larger than their ~55 B of JSON text, so the parser accounts for it against max_header_bytes.
  std::string h = "{";
  for (int i = 0; i < 2000; ++i) {
    if (i) h += ",";
    h += "\"t" + std::to_string(i) + R"(":{"dtype":"U8","shape":[0],"data_offsets":[0,0]})";
  }
  h += "}";
  const std::string image = safetensors_raw(h, 0);
  SafetensorsLimits roomy;
  roomy.max_header_bytes = 4 * h.size();
  Result<SafetensorsFile> ok = SafetensorsFile::parse(as_bytes(image), "many", roomy);
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(ok->tensors().size(), 2000u);
  EXPECT_NE(ok->find("t1999"), nullptr);

  SafetensorsLimits tight;
  tight.max_header_bytes = h.size();  // the text fits the limit, its entries in memory do not
  test::AllocationScope scope;
  Result<SafetensorsFile> r = SafetensorsFile::parse(as_bytes(image), "many", tight);
  const uint64_t bytes = scope.bytes();
  expect_one_error(r.status(), StatusCode::kResourceExhausted, {"'many'", "need more than", "max_header_bytes"});
  EXPECT_LT(bytes, 3 * tight.max_header_bytes) << "parser allocations stay within a small multiple of the bound";
}

}  // namespace
}  // namespace ws::io
