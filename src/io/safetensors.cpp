// Bounded safetensors reader and checkpoint folders; see include/warpstream/safetensors.h.
//
// The header is parsed with nlohmann-json's SAX interface straight from the mapping into a small
// state machine that accepts exactly the safetensors schema, so a hostile header can neither
// build a large DOM nor nest deeply: anything outside the schema stops the parse at once.
#include "warpstream/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "core/json_parse.h"

namespace ws::io {
namespace {

using nlohmann::json;

struct DTypeName {
  std::string_view name;
  DType dtype;
};
constexpr DTypeName kDTypes[] = {
    {"F32", DType::kFloat32}, {"F16", DType::kFloat16},  {"BF16", DType::kBFloat16},
    {"I8", DType::kInt8},     {"U8", DType::kUInt8},     {"F8_E4M3", DType::kFloat8E4M3FN},
    {"BOOL", DType::kBool},   {"I16", DType::kInt16},    {"U16", DType::kUInt16},
    {"I32", DType::kInt32},   {"U32", DType::kUInt32},   {"I64", DType::kInt64},
    {"U64", DType::kUInt64},  {"F64", DType::kFloat64},
};
// safetensors dtypes we know by name but do not read.
constexpr std::string_view kUnsupportedDTypes[] = {"F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64"};

std::string quote_escaped(std::string_view s) {
  std::string out(1, '\'');
  out += escape_for_message(s);
  out.push_back('\'');
  return out;
}

std::string dims_string(const std::vector<int64_t>& shape) { return shape_string(shape); }

// Estimated heap bytes the parser keeps per tensor / metadata entry beyond the strings themselves.
constexpr uint64_t kEntryOverhead = sizeof(SafetensorsTensor) + sizeof(uint32_t) + 32;

/// SAX handler accepting exactly: { "name": {"dtype": str, "shape": [uint...], "data_offsets": [uint, uint]},
/// "__metadata__": {str: str} }. The first violation is kept in `error` and stops the parse.
class HeaderHandler {
 public:
  HeaderHandler(const std::string& file, uint64_t data_size, const SafetensorsLimits& limits,
                std::vector<SafetensorsTensor>& tensors, std::map<std::string, std::string>& metadata)
      : file_(file), data_size_(data_size), limits_(limits), tensors_(tensors), metadata_(metadata) {}

  Status error;

  // ---- nlohmann::json_sax interface -------------------------------------------------------
  bool null() { return value("null"); }
  bool boolean(bool) { return value("a boolean"); }
  bool number_integer(json::number_integer_t v) {
    if (state_ == State::kShape) return fail_entry("shape dim " + std::to_string(cur_.shape.size()) + " is " + std::to_string(v) + "; dims must be >= 0");
    if (state_ == State::kOffsets) return fail_entry("data_offsets[" + std::to_string(n_offsets_) + "] is " + std::to_string(v) + "; offsets must be >= 0");
    return value("an integer");
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (state_ == State::kShape) {
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return fail_entry("shape dim " + std::to_string(cur_.shape.size()) + " is " + std::to_string(v) + ", above 2^63-1");
      if (cur_.shape.size() >= limits_.max_rank)
        return fail(StatusCode::kResourceExhausted, entry_prefix() + "shape has more than " + std::to_string(limits_.max_rank) +
                                                         " dims (SafetensorsLimits::max_rank)");
      cur_.shape.push_back(static_cast<int64_t>(v));
      return true;
    }
    if (state_ == State::kOffsets) {
      if (n_offsets_ >= 2) return fail_entry("data_offsets has more than 2 entries; expected [begin, end]");
      offsets_[n_offsets_++] = v;
      return true;
    }
    return value("an integer");
  }
  bool number_float(json::number_float_t, const std::string& text) {
    if (state_ == State::kShape)
      return fail_entry("shape dim " + std::to_string(cur_.shape.size()) + " is " + escape_for_message(text) + "; dims must be integers");
    if (state_ == State::kOffsets)
      return fail_entry("data_offsets[" + std::to_string(n_offsets_) + "] is " + escape_for_message(text) + "; offsets must be integers");
    return value("a number");
  }
  bool string(std::string& s) {
    if (state_ == State::kField && field_ == Field::kDtype) {
      cur_dtype_ = std::move(s);
      state_ = State::kEntry;
      return true;
    }
    if (state_ == State::kMetaValue) {
      if (!account(meta_key_.size() + s.size() + kEntryOverhead)) return false;
      if (metadata_.count(meta_key_) != 0) return fail_model("__metadata__ key " + quote_escaped(meta_key_) + " appears twice");
      metadata_.emplace(std::move(meta_key_), std::move(s));
      state_ = State::kMeta;
      return true;
    }
    return value("a string");
  }
  bool binary(json::binary_t&) { return value("binary data"); }

  bool start_object(std::size_t) {
    switch (state_) {
      case State::kStart: state_ = State::kTop; return true;
      case State::kEntryStart:
        if (is_meta_) {
          if (seen_meta_) return fail_model("\"__metadata__\" appears twice");
          seen_meta_ = true;
          state_ = State::kMeta;
          return true;
        }
        cur_ = SafetensorsTensor{};
        cur_.name = std::move(key_);
        cur_dtype_.clear();
        have_dtype_ = have_shape_ = have_offsets_ = false;
        n_offsets_ = 0;
        state_ = State::kEntry;
        return true;
      default: return value("an object");
    }
  }
  bool key(std::string& k) {
    if (state_ == State::kTop) {
      is_meta_ = k == "__metadata__";
      key_ = std::move(k);
      state_ = State::kEntryStart;
      return true;
    }
    if (state_ == State::kMeta) {
      meta_key_ = std::move(k);
      state_ = State::kMetaValue;
      return true;
    }
    // kEntry: one of the three fields, each once
    bool* seen = nullptr;
    if (k == "dtype") { field_ = Field::kDtype; seen = &have_dtype_; }
    else if (k == "shape") { field_ = Field::kShape; seen = &have_shape_; }
    else if (k == "data_offsets") { field_ = Field::kOffsets; seen = &have_offsets_; }
    else return fail_entry("unknown field " + quote_escaped(k) + " (expected dtype, shape, data_offsets)");
    if (*seen) return fail_entry("field " + quote_escaped(k) + " appears twice");
    *seen = true;
    state_ = State::kField;
    return true;
  }
  bool end_object() {
    if (state_ == State::kMeta) { state_ = State::kTop; return true; }
    if (state_ == State::kTop) { state_ = State::kDone; return true; }
    return finish_entry();  // kEntry
  }
  bool start_array(std::size_t) {
    if (state_ == State::kField && field_ == Field::kShape) { state_ = State::kShape; return true; }
    if (state_ == State::kField && field_ == Field::kOffsets) { state_ = State::kOffsets; return true; }
    return value("an array");
  }
  bool end_array() {
    if (state_ == State::kOffsets && n_offsets_ != 2)
      return fail_entry("data_offsets has " + std::to_string(n_offsets_) + " entries; expected [begin, end]");
    state_ = State::kEntry;  // kShape or kOffsets
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    // ex.what() quotes the last bytes read from the file: escape them.
    return fail_model("header is not valid JSON at header byte " + std::to_string(position) + " (file offset " +
                      std::to_string(position + 8) + "): " + escape_for_message(ex.what()));
  }

  bool complete() const { return state_ == State::kDone; }

 private:
  enum class State { kStart, kTop, kEntryStart, kEntry, kField, kShape, kOffsets, kMeta, kMetaValue, kDone };
  enum class Field { kDtype, kShape, kOffsets };

  std::string prefix() const { return "safetensors file " + quote_escaped(file_) + ": "; }
  std::string entry_prefix() const { return prefix() + "tensor " + quote_escaped(cur_.name) + ": "; }
  bool fail(StatusCode code, std::string msg) {
    if (error.is_ok()) error = Status(code, std::move(msg));
    return false;
  }
  bool fail_model(const std::string& msg) { return fail(StatusCode::kInvalidModel, prefix() + msg); }
  bool fail_entry(const std::string& msg) { return fail(StatusCode::kInvalidModel, entry_prefix() + msg); }

  // A JSON value of kind `what` arrived where the schema does not allow it.
  bool value(const char* what) {
    switch (state_) {
      case State::kStart: return fail_model(std::string("header must be a JSON object, got ") + what);
      case State::kEntryStart:
        if (is_meta_) return fail_model(std::string("\"__metadata__\" must be an object of strings, got ") + what);
        return fail_model("tensor " + quote_escaped(key_) + ": entry must be an object {dtype, shape, data_offsets}, got " + what);
      case State::kField:
        switch (field_) {
          case Field::kDtype: return fail_entry(std::string("field 'dtype' must be a string, got ") + what);
          case Field::kShape: return fail_entry(std::string("field 'shape' must be an array of integers, got ") + what);
          case Field::kOffsets: return fail_entry(std::string("field 'data_offsets' must be an array [begin, end], got ") + what);
        }
        break;
      case State::kShape:
        return fail_entry("shape dim " + std::to_string(cur_.shape.size()) + " must be an integer, got " + what);
      case State::kOffsets:
        return fail_entry("data_offsets[" + std::to_string(n_offsets_) + "] must be an integer, got " + what);
      case State::kMetaValue:
        return fail_model("__metadata__ value for " + quote_escaped(meta_key_) + " must be a string, got " + what);
      default: break;
    }
    return fail_model(std::string("unexpected ") + what + " in the header");
  }

  bool account(uint64_t bytes) {
    footprint_ += bytes;
    if (footprint_ > limits_.max_header_bytes)
      return fail(StatusCode::kResourceExhausted,
                  prefix() + "the header's entries need more than " + std::to_string(limits_.max_header_bytes) +
                      " bytes of memory (SafetensorsLimits::max_header_bytes)");
    return true;
  }

  bool finish_entry() {
    if (!have_dtype_) return fail_entry("missing field 'dtype'");
    if (!have_shape_) return fail_entry("missing field 'shape'");
    if (!have_offsets_) return fail_entry("missing field 'data_offsets'");
    cur_.dtype = safetensors_dtype(cur_dtype_);
    if (cur_.dtype == DType::kUndefined) {
      for (std::string_view u : kUnsupportedDTypes)
        if (cur_dtype_ == u)
          return fail(StatusCode::kUnsupported, entry_prefix() + "dtype " + quote_escaped(cur_dtype_) +
                                                    " is not supported (F32 F16 BF16 I8 U8 F8_E4M3 BOOL I16 U16 I32 U32 I64 U64 F64 are)");
      return fail_entry("unknown dtype " + quote_escaped(cur_dtype_));
    }
    uint64_t elements = 1;
    for (size_t i = 0; i < cur_.shape.size(); ++i) {
      if (__builtin_mul_overflow(elements, static_cast<uint64_t>(cur_.shape[i]), &elements) ||
          elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return fail_entry("shape " + dims_string(cur_.shape) + ": the element count overflows 64 bits");
    }
    uint64_t nbytes = 0;
    const uint64_t esize = dtype_size(cur_.dtype);
    if (__builtin_mul_overflow(elements, esize, &nbytes))
      return fail_entry("shape " + dims_string(cur_.shape) + " x " + std::to_string(esize) + " bytes overflows 64 bits");
    const uint64_t begin = offsets_[0], end = offsets_[1];
    const std::string off = "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "]";
    if (begin > end) return fail_entry(off + ": begin > end");
    if (end > data_size_)
      return fail_entry(off + " runs past the data section (" + std::to_string(data_size_) + " bytes)");
    if (end - begin != nbytes)
      return fail_entry(off + " hold " + std::to_string(end - begin) + " bytes but " + cur_dtype_ + " " +
                        dims_string(cur_.shape) + " needs " + std::to_string(elements) + " x " + std::to_string(esize) +
                        " = " + std::to_string(nbytes));
    cur_.begin = begin;
    cur_.end = end;
    if (!account(cur_.name.size() + cur_.shape.size() * sizeof(int64_t) + kEntryOverhead)) return false;
    tensors_.push_back(std::move(cur_));
    state_ = State::kTop;
    return true;
  }

  const std::string& file_;
  const uint64_t data_size_;
  const SafetensorsLimits& limits_;
  std::vector<SafetensorsTensor>& tensors_;
  std::map<std::string, std::string>& metadata_;

  State state_ = State::kStart;
  Field field_ = Field::kDtype;
  std::string key_, meta_key_, cur_dtype_;
  bool is_meta_ = false, seen_meta_ = false;
  SafetensorsTensor cur_;
  bool have_dtype_ = false, have_shape_ = false, have_offsets_ = false;
  uint64_t offsets_[2] = {0, 0};
  int n_offsets_ = 0;
  uint64_t footprint_ = 0;
};

Status os_error(const std::string& what, const std::string& path, int err) {
  const StatusCode code = (err == ENOENT || err == ENOTDIR) ? StatusCode::kNotFound : StatusCode::kInvalidArgument;
  return Status(code, what + " " + quote_escaped(path) + ": " + std::strerror(err));
}

bool exists_regular(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

/// Parses a small JSON file (index, config) to a DOM, refusing duplicate keys in any object.
Result<json> parse_json_object(const std::vector<char>& text, const std::string& path, const char* what) {
  JsonParseOptions po;
  po.refuse_duplicate_keys = true;
  po.code = StatusCode::kInvalidModel;
  WS_ASSIGN_OR_RETURN(json doc, parse_json_bounded(std::string_view(text.data(), text.size()),
                                                   std::string(what) + " " + quote_escaped(path), po));
  if (!doc.is_object()) return invalid_model(std::string(what) + " " + quote_escaped(path) + " must hold a JSON object, got " + doc.type_name());
  return doc;
}

}  // namespace

// ---- names and messages ------------------------------------------------------------------------

DType safetensors_dtype(std::string_view name) {
  for (const DTypeName& d : kDTypes)
    if (d.name == name) return d.dtype;
  return DType::kUndefined;
}

std::string_view safetensors_dtype_name(DType t) {
  for (const DTypeName& d : kDTypes)
    if (d.dtype == t) return d.name;
  return {};
}

std::string escape_for_message(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7F) {
      out.push_back(ch);
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// ---- SafetensorsFile ---------------------------------------------------------------------------

struct SafetensorsFile::Mapping {
  void* addr = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (addr != nullptr) ::munmap(addr, size);
  }
};

SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
SafetensorsFile::~SafetensorsFile() = default;

Result<SafetensorsFile> SafetensorsFile::parse(std::span<const std::byte> bytes, std::string name,
                                               const SafetensorsLimits& limits) {
  SafetensorsFile f;
  f.path_ = std::move(name);
  const std::string prefix = "safetensors file " + quote_escaped(f.path_) + ": ";
  const uint64_t size = bytes.size();
  if (size < 8)
    return invalid_model(prefix + "file is " + std::to_string(size) +
                         " bytes; a safetensors file starts with an 8-byte little-endian header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  if (n > size - 8)
    return invalid_model(prefix + "header length " + std::to_string(n) + " runs past the end of the file (" +
                         std::to_string(size) + " bytes: at most " + std::to_string(size - 8) +
                         " after the 8-byte length; truncated file?)");
  if (n > limits.max_header_bytes)
    return resource_exhausted(prefix + "header length " + std::to_string(n) + " exceeds the limit of " +
                              std::to_string(limits.max_header_bytes) + " bytes (SafetensorsLimits::max_header_bytes)");
  f.header_bytes_ = n;
  f.data_ = bytes.subspan(static_cast<size_t>(8 + n));

  HeaderHandler handler(f.path_, f.data_.size(), limits, f.tensors_, f.metadata_);
  const char* json_begin = reinterpret_cast<const char*>(bytes.data()) + 8;
  bool ok = false;
  try {
    ok = json::sax_parse(json_begin, json_begin + n, &handler, json::input_format_t::json, /*strict=*/true);
  } catch (const std::exception& e) {
    return invalid_model(prefix + "header is not valid JSON: " + escape_for_message(e.what()));
  }
  if (!handler.error.is_ok()) return handler.error;
  if (!ok || !handler.complete()) return invalid_model(prefix + "header is not a complete JSON object");

  // Name index (sorted) -> duplicates are adjacent.
  f.by_name_.resize(f.tensors_.size());
  for (uint32_t i = 0; i < f.by_name_.size(); ++i) f.by_name_[i] = i;
  std::sort(f.by_name_.begin(), f.by_name_.end(),
            [&](uint32_t a, uint32_t b) { return f.tensors_[a].name < f.tensors_[b].name; });
  for (size_t i = 1; i < f.by_name_.size(); ++i) {
    const SafetensorsTensor& a = f.tensors_[f.by_name_[i - 1]];
    if (a.name == f.tensors_[f.by_name_[i]].name)
      return invalid_model(prefix + "tensor " + quote_escaped(a.name) + " appears twice in the header (entries " +
                           std::to_string(std::min(f.by_name_[i - 1], f.by_name_[i])) + " and " +
                           std::to_string(std::max(f.by_name_[i - 1], f.by_name_[i])) + ")");
  }
  // Overlap: sort non-empty ranges by begin; each must start at or after the previous end.
  std::vector<uint32_t> by_offset;
  by_offset.reserve(f.tensors_.size());
  for (uint32_t i = 0; i < f.tensors_.size(); ++i)
    if (f.tensors_[i].bytes() > 0) by_offset.push_back(i);
  std::sort(by_offset.begin(), by_offset.end(), [&](uint32_t a, uint32_t b) {
    const auto& x = f.tensors_[a];
    const auto& y = f.tensors_[b];
    return x.begin != y.begin ? x.begin < y.begin : x.end < y.end;
  });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const SafetensorsTensor& a = f.tensors_[by_offset[i - 1]];
    const SafetensorsTensor& b = f.tensors_[by_offset[i]];
    if (b.begin < a.end)
      return invalid_model(prefix + "tensors " + quote_escaped(a.name) + " [" + std::to_string(a.begin) + ", " +
                           std::to_string(a.end) + ") and " + quote_escaped(b.name) + " [" + std::to_string(b.begin) + ", " +
                           std::to_string(b.end) + ") overlap in the data section");
  }
  return f;
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path, const SafetensorsLimits& limits) {
  // O_NONBLOCK: opening a FIFO with no writer must not hang; fstat below refuses it before anything is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return os_error("cannot open safetensors file", path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return os_error("cannot stat safetensors file", path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument("safetensors file " + quote_escaped(path) + " is not a regular file" +
                            (S_ISDIR(st.st_mode) ? " (a directory: open it with open_checkpoint)" : ""));
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  auto mapping = std::make_unique<Mapping>();
  if (size > 0) {
    void* addr = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return Status(StatusCode::kResourceExhausted,
                    "cannot map safetensors file " + quote_escaped(path) + " (" + std::to_string(size) + " bytes): " + std::strerror(err));
    }
    mapping->addr = addr;
    mapping->size = static_cast<size_t>(size);
  }
  ::close(fd);
  std::span<const std::byte> bytes(static_cast<const std::byte*>(mapping->addr), static_cast<size_t>(size));
  WS_ASSIGN_OR_RETURN(SafetensorsFile f, parse(bytes, path, limits));
  f.mapping_ = std::move(mapping);
  return f;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                             [&](uint32_t i, std::string_view n) { return tensors_[i].name < n; });
  if (it == by_name_.end() || tensors_[*it].name != name) return nullptr;
  return &tensors_[*it];
}

std::span<const std::byte> SafetensorsFile::bytes(const SafetensorsTensor& t) const {
  return data_.subspan(static_cast<size_t>(t.begin), static_cast<size_t>(t.end - t.begin));
}

// ---- checkpoints -------------------------------------------------------------------------------

namespace {

bool plain_file_name(std::string_view s) {
  if (s.empty() || s == "." || s == "..") return false;
  for (char c : s)
    if (c == '/' || c == '\\' || c == '\0') return false;
  return true;
}

Result<std::string> single_safetensors_in(const std::string& dir, const char* suffix) {
  std::error_code ec;
  std::vector<std::string> found;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (ends_with(name, suffix) && it->is_regular_file(ec)) found.push_back(name);
  }
  if (ec) return Status(StatusCode::kNotFound, "cannot list checkpoint folder " + quote_escaped(dir) + ": " + ec.message());
  std::sort(found.begin(), found.end());
  if (found.size() > 1) {
    std::string list;
    for (const auto& n : found) list += (list.empty() ? "" : ", ") + quote_escaped(n);
    return invalid_argument("checkpoint folder " + quote_escaped(dir) + " holds several " + suffix + " files (" + list +
                            "); pass the one to use");
  }
  return found.empty() ? std::string() : dir + "/" + found[0];
}

}  // namespace

Result<SafetensorsCheckpoint> SafetensorsCheckpoint::open(const std::string& path, const SafetensorsLimits& limits) {
  SafetensorsCheckpoint c;
  c.path_ = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return os_error("cannot open checkpoint", path, errno);

  std::string dir, index_path, single_path;
  if (S_ISDIR(st.st_mode)) {
    dir = path;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (exists_regular(dir + "/diffusion_pytorch_model.safetensors.index.json")) {
      index_path = dir + "/diffusion_pytorch_model.safetensors.index.json";
    } else {
      WS_ASSIGN_OR_RETURN(index_path, single_safetensors_in(dir, ".safetensors.index.json"));
    }
    if (index_path.empty()) {
      if (exists_regular(dir + "/diffusion_pytorch_model.safetensors")) single_path = dir + "/diffusion_pytorch_model.safetensors";
      else if (exists_regular(dir + "/model.safetensors")) single_path = dir + "/model.safetensors";
      else { WS_ASSIGN_OR_RETURN(single_path, single_safetensors_in(dir, ".safetensors")); }
    }
    if (index_path.empty() && single_path.empty()) {
      std::string hint;
      struct stat sub {};
      if (::stat((dir + "/transformer").c_str(), &sub) == 0 && S_ISDIR(sub.st_mode))
        hint = " (a diffusers pipeline folder? pass its transformer/ subfolder)";
      return not_found("checkpoint folder " + quote_escaped(dir) + " holds no .safetensors file and no .safetensors.index.json" + hint);
    }
  } else if (S_ISREG(st.st_mode)) {
    const size_t slash = path.find_last_of('/');
    dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
    if (ends_with(path, ".index.json")) index_path = path;
    else single_path = path;
  } else {
    return invalid_argument("checkpoint " + quote_escaped(path) + " is neither a file nor a folder");
  }

  if (!single_path.empty()) {
    WS_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open(single_path, limits));
    c.files_.push_back(std::move(f));
  } else {
    WS_ASSIGN_OR_RETURN(std::vector<char> index_text, read_regular_file(index_path, "checkpoint index", limits.max_header_bytes));
    WS_ASSIGN_OR_RETURN(json index, parse_json_object(index_text, index_path, "checkpoint index"));
    const std::string ip = "checkpoint index " + quote_escaped(index_path) + ": ";
    auto wm = index.find("weight_map");
    if (wm == index.end()) return invalid_model(ip + "missing \"weight_map\"");
    if (!wm->is_object()) return invalid_model(ip + "\"weight_map\" must be an object {tensor: shard file}, got " + wm->type_name());
    if (wm->empty()) return invalid_model(ip + "\"weight_map\" is empty");
    std::map<std::string, uint32_t> shard_index;  // shard file name -> index in files_
    std::vector<std::string> shard_names;
    for (auto it = wm->begin(); it != wm->end(); ++it) {
      if (!it->is_string())
        return invalid_model(ip + "weight_map[" + quote_escaped(it.key()) + "] must be a shard file name (string), got " + it->type_name());
      const std::string& shard = it->get_ref<const std::string&>();
      if (!plain_file_name(shard))
        return invalid_model(ip + "weight_map[" + quote_escaped(it.key()) + "] = " + quote_escaped(shard) +
                             ": a shard must be a plain file name inside " + quote_escaped(dir));
      auto [pos, inserted] = shard_index.emplace(shard, static_cast<uint32_t>(shard_names.size()));
      if (inserted) {
        shard_names.push_back(shard);
        const std::string shard_path = dir + "/" + shard;
        Result<SafetensorsFile> f = SafetensorsFile::open(shard_path, limits);
        if (!f.is_ok())
          return Status(f.status().code(), ip + "shard " + quote_escaped(shard) + " (holds " + quote_escaped(it.key()) + "): " + f.status().message());
        c.files_.push_back(std::move(f).value());
      }
      const SafetensorsFile& file = c.files_[pos->second];
      if (file.find(it.key()) == nullptr)
        return invalid_model(ip + "tensor " + quote_escaped(it.key()) + " is mapped to shard " + quote_escaped(shard) +
                             ", which has no such tensor");
      c.shard_of_.emplace(it.key(), pos->second);
    }
    // Every shard tensor must be listed, and listed for this shard.
    for (uint32_t s = 0; s < c.files_.size(); ++s) {
      for (const SafetensorsTensor& t : c.files_[s].tensors()) {
        auto it = c.shard_of_.find(t.name);
        if (it == c.shard_of_.end())
          return invalid_model(ip + "shard " + quote_escaped(shard_names[s]) + " holds tensor " + quote_escaped(t.name) + ", which weight_map does not list");
        if (it->second != s)
          return invalid_model(ip + "tensor " + quote_escaped(t.name) + " is in shard " + quote_escaped(shard_names[s]) + " and in shard " +
                               quote_escaped(shard_names[it->second]) + " (weight_map names the latter)");
      }
    }
  }

  const std::string config = dir + "/config.json";
  struct stat cst {};
  if (::stat(config.c_str(), &cst) == 0) {  // present: it must be a regular file (read_regular_file says so)
    WS_ASSIGN_OR_RETURN(std::vector<char> text, read_regular_file(config, "config file", limits.max_header_bytes));
    WS_ASSIGN_OR_RETURN(json doc, parse_json_object(text, config, "config file"));
    (void)doc;
    c.config_text_.assign(text.begin(), text.end());
    c.config_path_ = config;
  }
  return c;
}

SafetensorsCheckpoint SafetensorsCheckpoint::from_file(SafetensorsFile file) {
  SafetensorsCheckpoint c;
  c.path_ = file.path();
  c.files_.push_back(std::move(file));
  return c;
}

CheckpointTensor SafetensorsCheckpoint::find(std::string_view name) const {
  CheckpointTensor out;
  const SafetensorsFile* file = nullptr;
  if (shard_of_.empty()) {
    if (!files_.empty()) file = &files_[0];
  } else {
    auto it = shard_of_.find(name);
    if (it != shard_of_.end()) file = &files_[it->second];
  }
  if (file == nullptr) return out;
  if (const SafetensorsTensor* t = file->find(name)) {
    out.tensor = t;
    out.file = file;
    out.bytes = file->bytes(*t);
  }
  return out;
}

Result<CheckpointTensor> SafetensorsCheckpoint::get(std::string_view name) const {
  CheckpointTensor t = find(name);
  if (t.tensor == nullptr) return not_found("checkpoint " + quote_escaped(path_) + " has no tensor " + quote_escaped(name));
  return t;
}

std::vector<CheckpointTensor> SafetensorsCheckpoint::tensors() const {
  std::vector<CheckpointTensor> out;
  out.reserve(size());
  for (const SafetensorsFile& f : files_)
    for (const SafetensorsTensor& t : f.tensors()) out.push_back({&t, &f, f.bytes(t)});
  return out;
}

size_t SafetensorsCheckpoint::size() const {
  size_t n = 0;
  for (const SafetensorsFile& f : files_) n += f.tensors().size();
  return n;
}

Result<SafetensorsCheckpoint> open_checkpoint(const std::string& path, const SafetensorsLimits& limits) {
  return SafetensorsCheckpoint::open(path, limits);
}

}  // namespace ws::io
