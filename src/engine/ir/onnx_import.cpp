// ONNX ModelProto → IR, through the ONNX protobuf library (Debian libonnx-dev).
// Follows https://github.com/onnx/onnx/blob/main/docs/IR.md: initializers from raw_data or the
// typed fields, value_info shapes, Constant nodes turned into constant tensors.
#include <onnx/onnx_pb.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstring>

#include <algorithm>
#include <fstream>
#include <unordered_map>

#include "core/checked_math.h"
#include "core/escape.h"
#include "core/file_io.h"
#include "core/limits.h"
#include "engine/ir/tensor_proto.h"

#include "warpstream/graph.h"

namespace ws::ir {
namespace {

bool is_supported_dtype(int32_t t) {
  return dtype_size(static_cast<DType>(t)) != 0;
}

// Converts a TensorProto (dims + data) into a Tensor; `what` labels errors.
// Every byte count is checked against the data actually present in the protobuf BEFORE anything is
// allocated, so a few bytes of dims cannot make us zero-fill gigabytes (issue 16). `max_bytes` is
// further capped by the build limit (core/limits.h, WS_MAX_TENSOR_BYTES).
Result<Tensor> convert_tensor(const onnx::TensorProto& tp, const std::string& what, size_t max_bytes) {
  max_bytes = std::min(max_bytes, build_limits().max_tensor_bytes);
  Tensor t;
  t.name = tp.name();
  if (tp.data_location() == onnx::TensorProto::EXTERNAL || tp.external_data_size() > 0) {
    return unsupported(what + ": data stored in an external file is not supported; re-export with all tensors "
                              "embedded (onnx.save_model(..., save_as_external_data=False))");
  }
  if (!is_supported_dtype(tp.data_type())) {
    return unsupported(what + ": element type " + dtype_name(static_cast<DType>(tp.data_type())) +
                       " is not supported");
  }
  t.dtype = static_cast<DType>(tp.data_type());
  for (int64_t d : tp.dims()) {
    if (d < 0) return invalid_model(what + ": negative dimension " + std::to_string(d));
    t.shape.push_back(d);
  }
  t.shape_known = true;
  const int64_t count = shape_elements(t.shape);
  const size_t esize = dtype_size(t.dtype);
  if (count < 0 || static_cast<uint64_t>(count) > max_bytes / esize) {
    return resource_exhausted(what + ": dims " + shape_string(t.shape) + " promise more than the " +
                              std::to_string(max_bytes) + "-byte limit for one tensor");
  }
  const size_t bytes = static_cast<size_t>(count) * esize;
  auto mismatch = [&](size_t have) {
    return invalid_model(what + ": dims " + shape_string(t.shape) + " need " + std::to_string(count) +
                         " elements but the data holds " + std::to_string(have));
  };
  // How many elements the typed field holds (checked before allocating).
  int64_t have = 0;
  if (tp.has_raw_data()) {
    if (tp.raw_data().size() != bytes) {
      return invalid_model(what + ": dims " + shape_string(t.shape) + " need " + std::to_string(bytes) +
                           " bytes of raw_data but it holds " + std::to_string(tp.raw_data().size()));
    }
  } else {
    switch (t.dtype) {
      case DType::kFloat32: have = tp.float_data_size(); break;
      case DType::kInt64: have = tp.int64_data_size(); break;
      case DType::kFloat64: have = tp.double_data_size(); break;
      case DType::kUInt32: case DType::kUInt64: have = tp.uint64_data_size(); break;
      default: have = tp.int32_data_size(); break;
    }
    if (have != count) return mismatch(static_cast<size_t>(have));
  }
  std::vector<std::byte> data(bytes);
  if (tp.has_raw_data()) {
    if (bytes) std::memcpy(data.data(), tp.raw_data().data(), bytes);
  } else {
    switch (t.dtype) {
      case DType::kFloat32:
        if (bytes) std::memcpy(data.data(), tp.float_data().data(), bytes);
        break;
      case DType::kInt64:
        if (bytes) std::memcpy(data.data(), tp.int64_data().data(), bytes);
        break;
      case DType::kFloat64:
        if (bytes) std::memcpy(data.data(), tp.double_data().data(), bytes);
        break;
      case DType::kUInt32: case DType::kUInt64:
        for (int64_t i = 0; i < count; ++i) {
          uint64_t v = tp.uint64_data(static_cast<int>(i));
          if (esize == 4) { uint32_t v32 = static_cast<uint32_t>(v); std::memcpy(data.data() + i * 4, &v32, 4); }
          else std::memcpy(data.data() + i * 8, &v, 8);
        }
        break;
      default:  // int32 / int16 / int8 / uint8 / uint16 / bool / float16 / bfloat16 live in int32_data
        for (int64_t i = 0; i < count; ++i) {
          int32_t v = tp.int32_data(static_cast<int>(i));
          std::memcpy(data.data() + i * esize, &v, esize);  // little-endian truncation
        }
        break;
    }
  }
  t.data = std::move(data);
  return t;
}

Result<Attribute> convert_attribute(const onnx::AttributeProto& a, const std::string& what, size_t max_bytes) {
  Attribute out;
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::INT: out.kind = Attribute::Kind::kInt; out.i = a.i(); break;
    case A::FLOAT: out.kind = Attribute::Kind::kFloat; out.f = a.f(); break;
    case A::STRING: out.kind = Attribute::Kind::kString; out.s = a.s(); break;
    case A::INTS: out.kind = Attribute::Kind::kInts; out.ints.assign(a.ints().begin(), a.ints().end()); break;
    case A::FLOATS: out.kind = Attribute::Kind::kFloats; out.floats.assign(a.floats().begin(), a.floats().end()); break;
    case A::STRINGS: out.kind = Attribute::Kind::kStrings; out.strings.assign(a.strings().begin(), a.strings().end()); break;
    case A::TENSOR: {
      out.kind = Attribute::Kind::kTensor;
      WS_ASSIGN_OR_RETURN(Tensor t, convert_tensor(a.t(), what + " attribute " + quoted(a.name()), max_bytes));
      out.tensor = std::move(t);
      break;
    }
    default: out.kind = Attribute::Kind::kOther; break;
  }
  return out;
}

// Static shape of a ValueInfo, resolving symbolic/unknown dims from `fixed` when given.
Status convert_value_info(const onnx::ValueInfoProto& vi, Tensor& t, const ImportOptions& opt, bool is_input) {
  t.name = vi.name();
  if (!vi.type().has_tensor_type()) {
    return unsupported("graph " + std::string(is_input ? "input" : "output") + " " + quoted(vi.name()) +
                       " is not a tensor (sequence/map/optional types are not supported)");
  }
  const auto& tt = vi.type().tensor_type();
  t.dtype = static_cast<DType>(tt.elem_type());
  auto fixed = is_input ? opt.input_shapes.find(vi.name()) : opt.input_shapes.end();
  if (is_input && fixed == opt.input_shapes.end()) fixed = opt.input_shapes.find("*");
  if (fixed != opt.input_shapes.end()) {
    if (tt.has_shape() && tt.shape().dim_size() != static_cast<int>(fixed->second.size())) {
      return invalid_argument("input " + quoted(vi.name()) + " has rank " + std::to_string(tt.shape().dim_size()) +
                              " but the fixed shape " + shape_string(fixed->second) + " has rank " +
                              std::to_string(fixed->second.size()));
    }
    if (tt.has_shape()) {
      for (int i = 0; i < tt.shape().dim_size(); ++i) {
        const auto& d = tt.shape().dim(i);
        if (d.has_dim_value() && d.dim_value() != fixed->second[static_cast<size_t>(i)]) {
          return invalid_argument("input " + quoted(vi.name()) + " dim " + std::to_string(i) + " is fixed to " +
                                  std::to_string(d.dim_value()) + " by the model, not " +
                                  std::to_string(fixed->second[static_cast<size_t>(i)]));
        }
      }
    }
    t.shape = fixed->second;
    t.shape_known = true;
    return check_shape_within_limits(t.shape, "input " + quoted(vi.name()));
  }
  if (!tt.has_shape()) {
    if (is_input) return invalid_model("graph input " + quoted(vi.name()) + " has no shape; fix it at build (input_shapes)");
    return Status::ok();
  }
  t.shape.clear();
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    if (!d.has_dim_value() || d.dim_value() < 0) {
      if (is_input) {
        return invalid_model("graph input " + quoted(vi.name()) + " dim " + std::to_string(i) + " (" + quoted(d.dim_param()) +
                             ") is not a fixed number; the engine is fixed-shape: give the input's full shape at build "
                             "(e.g. warpstream classify --input-shape 1x3x224x224)");
      }
      t.shape.clear();
      return Status::ok();  // output shapes come from inference
    }
    t.shape.push_back(d.dim_value());
  }
  t.shape_known = true;
  // A runtime input's size decides the arena and the caller's buffer: bound it like any tensor.
  if (is_input) return check_shape_within_limits(t.shape, "graph input " + quoted(vi.name()));
  return Status::ok();
}

}  // namespace

namespace {

// The bytes as a ModelProto with at least one graph node, or kInvalidModel naming `source` (already escaped).
Status parse_model_proto(std::span<const std::byte> bytes, const std::string& source, onnx::ModelProto& model) {
  if (bytes.empty()) return invalid_model(source + ": file is empty (0 bytes); expected an ONNX model");
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT32_MAX);
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    return invalid_model(source + ": not a valid ONNX model (protobuf parse failed after reading " +
                         std::to_string(coded.CurrentPosition()) + " of " + std::to_string(bytes.size()) +
                         " bytes: truncated or not an ONNX file)");
  }
  if (!model.has_graph() || model.graph().node_size() == 0) {
    return invalid_model(source + ": the file parsed but holds no graph nodes; is it an ONNX model?");
  }
  return Status::ok();
}

// The model file's bytes, bounded by protobuf's 2 GiB message limit (larger models need external data).
Result<std::vector<char>> read_model_file(const std::string& path) {
  auto raw = read_regular_file(path, "model file", (size_t{2} << 30) - 1);
  if (!raw && raw.status().code() == StatusCode::kResourceExhausted)
    return unsupported(raw.status().message() + "; models over 2 GiB need external data, which is not supported");
  return raw;
}

}  // namespace

Status check_onnx_model_file(const std::string& path) {
  WS_ASSIGN_OR_RETURN(std::vector<char> raw, read_model_file(path));
  onnx::ModelProto model;
  return parse_model_proto(std::as_bytes(std::span<const char>(raw)), escape_text(path), model);
}

Result<Graph> import_onnx_bytes(std::span<const std::byte> bytes, const std::string& source_name,
                                const ImportOptions& options) {
  const std::string source = escape_text(source_name);  // a file name is a string from outside too
  onnx::ModelProto model;
  WS_RETURN_IF_ERROR(parse_model_proto(bytes, source, model));
  Graph g;
  g.source = source;
  for (const auto& os : model.opset_import()) {
    if (os.domain().empty() || os.domain() == "ai.onnx") g.opset = os.version();
  }
  if (g.opset == 0) g.opset = 1;
  const auto& gp = model.graph();
  g.name = gp.name();
  std::unordered_map<std::string, TensorId> ids;
  auto get_or_add = [&](const std::string& n) -> TensorId {
    auto it = ids.find(n);
    if (it != ids.end()) return it->second;
    Tensor t;
    t.name = n;
    TensorId id = g.add_tensor(std::move(t));
    ids.emplace(n, id);
    return id;
  };

  for (int i = 0; i < gp.initializer_size(); ++i) {
    const auto& tp = gp.initializer(i);
    WS_ASSIGN_OR_RETURN(Tensor t, convert_tensor(tp, source + ": initializer " + quoted(tp.name()) + "",
                                                 options.max_tensor_bytes));
    TensorId id = get_or_add(tp.name());
    g.tensor(id) = std::move(t);
  }
  for (const auto& vi : gp.input()) {
    TensorId id = get_or_add(vi.name());
    if (g.tensor(id).is_constant()) continue;  // old-style: initializers listed as inputs
    auto frozen = options.frozen_inputs.find(vi.name());
    if (frozen != options.frozen_inputs.end()) {
      Tensor t = frozen->second;
      t.name = vi.name();
      t.shape_known = true;
      g.tensor(id) = std::move(t);
      continue;
    }
    Status s = convert_value_info(vi, g.tensor(id), options, true);
    if (!s.is_ok()) return Status(s.code(), source + ": " + s.message());
    g.inputs.push_back(id);
  }
  if (options.input_shapes.count("*") && g.inputs.size() != 1) {
    return invalid_argument(source + ": a shape for \"the only input\" was given but the model has " +
                            std::to_string(g.inputs.size()) + " runtime inputs; name the input");
  }
  for (const auto& n : options.input_shapes) {
    if (n.first == "*") continue;
    bool found = false;
    for (TensorId id : g.inputs) found |= g.tensor(id).name == n.first;
    if (!found) return invalid_argument(source + ": no graph input named " + quoted(n.first) + " to fix the shape of");
  }
  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& np = gp.node(i);
    Node node;
    node.op_type = np.op_type();
    node.name = np.name().empty() ? np.op_type() + "_" + std::to_string(i) : np.name();
    if (!np.domain().empty() && np.domain() != "ai.onnx") {
      return unsupported(source + ": node " + quoted(node.name) + " (" + escape_text(np.op_type()) + ") is in domain " + quoted(np.domain()) +
                         "; only the default ONNX domain is supported");
    }
    for (const auto& a : np.attribute()) {
      WS_ASSIGN_OR_RETURN(Attribute attr, convert_attribute(a, source + ": node " + quoted(node.name),
                                                            options.max_tensor_bytes));
      node.attributes.emplace(a.name(), std::move(attr));
    }
    for (const auto& in : np.input()) {
      if (in.empty()) { node.inputs.push_back(kNoTensor); continue; }
      auto it = ids.find(in);
      if (it == ids.end()) {
        return invalid_model(source + ": node " + quoted(node.name) + " (" + escape_text(np.op_type()) + ") reads " + quoted(in) +
                             ", which no earlier node, input or initializer produces");
      }
      node.inputs.push_back(it->second);
    }
    for (const auto& out : np.output()) {
      if (out.empty()) { node.outputs.push_back(kNoTensor); continue; }
      if (ids.count(out)) {
        return invalid_model(source + ": node " + quoted(node.name) + " writes " + quoted(out) + ", which already exists");
      }
      node.outputs.push_back(get_or_add(out));
    }
    // Constant nodes become constant tensors at import.
    if (node.op_type == "Constant") {
      if (node.outputs.size() != 1 || node.outputs[0] == kNoTensor) {
        return invalid_model(source + ": " + node.describe(g.opset) + " must have exactly one output");
      }
      Tensor& t = g.tensor(node.outputs[0]);
      const std::string name = t.name;
      if (const Attribute* v = node.find("value"); v && v->tensor) {
        t = *v->tensor;
      } else if (const Attribute* vf = node.find("value_float")) {
        t.dtype = DType::kFloat32; t.shape = {};
        t.data = std::vector<std::byte>(4); std::memcpy(t.data->data(), &vf->f, 4);
      } else if (const Attribute* vfs = node.find("value_floats")) {
        t.dtype = DType::kFloat32; t.shape = {static_cast<int64_t>(vfs->floats.size())};
        t.data = std::vector<std::byte>(vfs->floats.size() * 4);
        if (!vfs->floats.empty()) std::memcpy(t.data->data(), vfs->floats.data(), t.data->size());
      } else if (const Attribute* vi = node.find("value_int")) {
        t.dtype = DType::kInt64; t.shape = {};
        t.data = std::vector<std::byte>(8); std::memcpy(t.data->data(), &vi->i, 8);
      } else if (const Attribute* vis = node.find("value_ints")) {
        t.dtype = DType::kInt64; t.shape = {static_cast<int64_t>(vis->ints.size())};
        t.data = std::vector<std::byte>(vis->ints.size() * 8);
        if (!vis->ints.empty()) std::memcpy(t.data->data(), vis->ints.data(), t.data->size());
      } else {
        return unsupported(source + ": " + node.describe(g.opset) +
                           ": only the attributes value, value_float(s) and value_int(s) are supported");
      }
      t.name = name;
      t.shape_known = true;
      continue;
    }
    g.nodes.push_back(std::move(node));
  }
  for (const auto& vi : gp.output()) {
    auto it = ids.find(vi.name());
    if (it == ids.end()) return invalid_model(source + ": graph output " + quoted(vi.name()) + " is produced by no node");
    Tensor& t = g.tensor(it->second);
    if (!t.is_constant() && !t.shape_known) {
      Tensor declared;
      Status s = convert_value_info(vi, declared, options, false);
      if (!s.is_ok()) return Status(s.code(), source + ": " + s.message());
      if (t.dtype == DType::kUndefined) t.dtype = declared.dtype;
    }
    g.outputs.push_back(it->second);
  }
  if (g.outputs.empty()) return invalid_model(source + ": the graph declares no outputs");
  return g;
}

Result<Graph> import_onnx(const std::string& path, const ImportOptions& options) {
  WS_ASSIGN_OR_RETURN(std::vector<char> raw, read_model_file(path));
  return import_onnx_bytes(std::as_bytes(std::span<const char>(raw)), path, options);
}

Result<Tensor> parse_tensor_proto(std::span<const std::byte> bytes, const std::string& source_name,
                                  size_t max_tensor_bytes) {
  const std::string source = escape_text(source_name);
  max_tensor_bytes = std::min(max_tensor_bytes, build_limits().max_tensor_bytes);
  // The file itself is bounded too: a tensor's encoding is at most a little over its data.
  if (bytes.size() > max_tensor_bytes + (size_t{1} << 20) || bytes.size() > size_t{INT32_MAX}) {
    return resource_exhausted(source + ": " + std::to_string(bytes.size()) + " bytes is over the " +
                              std::to_string(max_tensor_bytes) + "-byte tensor limit (WS_MAX_TENSOR_BYTES)");
  }
  onnx::TensorProto tp;
  if (bytes.empty() || !tp.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return invalid_model(source + ": not an ONNX TensorProto (" + std::to_string(bytes.size()) + " bytes)");
  }
  if (tp.data_type() == 0) return unsupported(source + ": not a plain tensor (sequence/optional/map value?)");
  WS_ASSIGN_OR_RETURN(Tensor t, convert_tensor(tp, source, max_tensor_bytes));
  // A runtime input's shape decides buffers and work; bound its extent like any tensor.
  WS_RETURN_IF_ERROR(check_shape_within_limits(t.shape, source));
  return t;
}

Result<Tensor> read_tensor_proto(const std::string& path, size_t max_tensor_bytes) {
  max_tensor_bytes = std::min(max_tensor_bytes, build_limits().max_tensor_bytes);
  WS_ASSIGN_OR_RETURN(std::vector<char> bytes, read_regular_file(path, "tensor file", max_tensor_bytes + (1 << 20)));
  return parse_tensor_proto(std::as_bytes(std::span<const char>(bytes)), path, max_tensor_bytes);
}

}  // namespace ws::ir
