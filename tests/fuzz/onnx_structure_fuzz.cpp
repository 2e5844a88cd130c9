// libFuzzer target, structure-aware: the input is an ONNX ModelProto and the custom mutator edits
// its structure through the protobuf API — dims of initializers and graph inputs, attribute values
// and kinds, op types, input lists (dropped, emptied, duplicated, renamed), node order, opset,
// element types — then re-serialises it, so most mutants parse and reach shape inference, the
// passes and kernel binding (where byte-level mutation rarely gets). Inputs that do not parse fall
// back to libFuzzer's byte mutator. The same body as onnx_import_fuzz runs each mutant.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <limits>
#include <random>

#include "fuzz_common.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using Rng = std::minstd_rand;

const char* const kOpTypes[] = {
    "Add", "AveragePool", "BatchNormalization", "Clip", "Concat", "Constant", "Conv", "Div", "Dropout",
    "Flatten", "Gemm", "GlobalAveragePool", "HardSigmoid", "HardSwish", "Identity", "MatMul", "MaxPool",
    "Mul", "Pad", "Relu", "Reshape", "Shape", "Sigmoid", "Softmax", "Squeeze", "Sub", "Transpose",
    "Unsqueeze", "Gather", "Slice", "ReduceMean", "Resize", "Split", "Cast", "Expand", "Where"};
const char* const kAttrNames[] = {"pads", "strides", "dilations", "kernel_shape", "group", "axis", "axes",
                                  "perm", "shape", "auto_pad", "ceil_mode", "mode", "alpha", "beta",
                                  "transA", "transB", "epsilon", "min", "max", "value", "allowzero",
                                  "count_include_pad", "storage_order", "start", "end", "to", "keepdims"};
const char* const kAutoPad[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "", "\x1b[2J\n"};

int64_t interesting_int(Rng& r) {
  static const int64_t kValues[] = {0, 1, 2, 3, -1, -2, 7, 16, 255, 65536, int64_t{1} << 31, int64_t{1} << 32,
                                    int64_t{1} << 62, std::numeric_limits<int64_t>::max(),
                                    std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max() - 1};
  if (r() % 4 == 0) return static_cast<int64_t>(r() % 64) - 8;
  return kValues[r() % (sizeof kValues / sizeof kValues[0])];
}

template <typename Field>
void mutate_int_list(Field* f, Rng& r) {
  const int op = static_cast<int>(r() % 4);
  if (op == 0 || f->empty()) { f->Add(interesting_int(r)); return; }
  const int i = static_cast<int>(r() % static_cast<unsigned>(f->size()));
  if (op == 1) f->Set(i, interesting_int(r));
  else if (op == 2) f->RemoveLast();
  else f->Set(i, static_cast<int64_t>(static_cast<uint64_t>(f->Get(i)) + (r() % 2 ? 1u : ~uint64_t{0})));  // ±1, wrapping
}

std::string some_tensor_name(const onnx::GraphProto& g, Rng& r) {
  std::vector<const std::string*> names;
  for (const auto& t : g.initializer()) names.push_back(&t.name());
  for (const auto& v : g.input()) names.push_back(&v.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) names.push_back(&o);
  if (names.empty() || r() % 8 == 0) return r() % 2 ? "" : "no_such_tensor";
  return *names[r() % names.size()];
}

void mutate_attribute(onnx::AttributeProto* a, Rng& r) {
  using A = onnx::AttributeProto;
  switch (r() % 6) {
    case 0: a->set_type(A::INTS); mutate_int_list(a->mutable_ints(), r); break;
    case 1: a->set_type(A::INT); a->set_i(interesting_int(r)); break;
    case 2: a->set_type(A::FLOAT); a->set_f(r() % 2 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(interesting_int(r))); break;
    case 3: a->set_type(A::STRING); a->set_s(kAutoPad[r() % (sizeof kAutoPad / sizeof kAutoPad[0])]); break;
    case 4: a->set_name(kAttrNames[r() % (sizeof kAttrNames / sizeof kAttrNames[0])]); break;
    default: {
      const int t = static_cast<int>(r() % 16);
      if (onnx::AttributeProto_AttributeType_IsValid(t)) a->set_type(static_cast<A::AttributeType>(t));
      break;
    }
  }
}

void mutate_dims(google::protobuf::RepeatedField<int64_t>* dims, Rng& r) { mutate_int_list(dims, r); }

void mutate_model(onnx::ModelProto& m, Rng& r) {
  onnx::GraphProto* g = m.mutable_graph();
  const int nodes = g->node_size();
  switch (r() % 12) {
    case 0: case 1: {  // an attribute: change, add, or drop
      if (!nodes) break;
      onnx::NodeProto* n = g->mutable_node(static_cast<int>(r() % static_cast<unsigned>(nodes)));
      if (n->attribute_size() == 0 || r() % 3 == 0) {
        auto* a = n->add_attribute();
        a->set_name(kAttrNames[r() % (sizeof kAttrNames / sizeof kAttrNames[0])]);
        mutate_attribute(a, r);
      } else if (r() % 5 == 0) {
        n->mutable_attribute()->RemoveLast();
      } else {
        mutate_attribute(n->mutable_attribute(static_cast<int>(r() % static_cast<unsigned>(n->attribute_size()))), r);
      }
      break;
    }
    case 2: {  // op type
      if (!nodes) break;
      g->mutable_node(static_cast<int>(r() % static_cast<unsigned>(nodes)))
          ->set_op_type(kOpTypes[r() % (sizeof kOpTypes / sizeof kOpTypes[0])]);
      break;
    }
    case 3: case 4: {  // input list: drop, empty, duplicate, rename, add
      if (!nodes) break;
      onnx::NodeProto* n = g->mutable_node(static_cast<int>(r() % static_cast<unsigned>(nodes)));
      const int k = n->input_size();
      const int op = static_cast<int>(r() % 5);
      if (op == 0 && k) n->mutable_input()->RemoveLast();
      else if (op == 1 && k) n->set_input(static_cast<int>(r() % static_cast<unsigned>(k)), "");
      else if (op == 2 && k) n->add_input(n->input(static_cast<int>(r() % static_cast<unsigned>(k))));
      else if (op == 3 && k) n->set_input(static_cast<int>(r() % static_cast<unsigned>(k)), some_tensor_name(*g, r));
      else n->add_input(some_tensor_name(*g, r));
      break;
    }
    case 5: {  // initializer dims / data type / data length
      if (!g->initializer_size()) break;
      onnx::TensorProto* t = g->mutable_initializer(static_cast<int>(r() % static_cast<unsigned>(g->initializer_size())));
      const int op = static_cast<int>(r() % 4);
      if (op == 0) mutate_dims(t->mutable_dims(), r);
      else if (op == 1) t->set_data_type(static_cast<int32_t>(r() % 18));
      else if (op == 2 && t->has_raw_data()) t->mutable_raw_data()->resize(t->raw_data().size() / 2);
      else if (t->dims_size()) t->set_dims(static_cast<int>(r() % static_cast<unsigned>(t->dims_size())), interesting_int(r));
      break;
    }
    case 6: {  // graph input dims / element type
      if (!g->input_size()) break;
      auto* tt = g->mutable_input(static_cast<int>(r() % static_cast<unsigned>(g->input_size())))
                     ->mutable_type()->mutable_tensor_type();
      if (r() % 4 == 0) { tt->set_elem_type(static_cast<int32_t>(r() % 18)); break; }
      auto* shape = tt->mutable_shape();
      if (shape->dim_size() == 0 || r() % 4 == 0) { shape->add_dim()->set_dim_value(interesting_int(r) & 0xFF); break; }
      auto* d = shape->mutable_dim(static_cast<int>(r() % static_cast<unsigned>(shape->dim_size())));
      if (r() % 5 == 0) d->set_dim_param("N");
      else d->set_dim_value(r() % 3 ? static_cast<int64_t>(r() % 300) : interesting_int(r));
      break;
    }
    case 7: {  // node order
      if (nodes < 2) break;
      g->mutable_node()->SwapElements(static_cast<int>(r() % static_cast<unsigned>(nodes)),
                                      static_cast<int>(r() % static_cast<unsigned>(nodes)));
      break;
    }
    case 8: {  // opset
      if (!m.opset_import_size()) m.add_opset_import();
      m.mutable_opset_import(0)->set_version(static_cast<int64_t>(r() % 22));
      break;
    }
    case 9: {  // remove or duplicate a node
      if (!nodes) break;
      const int i = static_cast<int>(r() % static_cast<unsigned>(nodes));
      if (r() % 2) {
        g->mutable_node()->SwapElements(i, nodes - 1);
        g->mutable_node()->RemoveLast();
      } else {
        *g->add_node() = g->node(i);
      }
      break;
    }
    case 10: {  // outputs: rename or drop a node output; graph output names
      if (!nodes) break;
      onnx::NodeProto* n = g->mutable_node(static_cast<int>(r() % static_cast<unsigned>(nodes)));
      if (n->output_size() && r() % 2) n->set_output(static_cast<int>(r() % static_cast<unsigned>(n->output_size())), r() % 2 ? "" : some_tensor_name(*g, r));
      else n->add_output("extra_" + std::to_string(r() % 4));
      break;
    }
    default: {  // a node's name: long or with control bytes (message escaping)
      if (!nodes) break;
      g->mutable_node(static_cast<int>(r() % static_cast<unsigned>(nodes)))->set_name(r() % 2 ? "n\n\x1b[31m" : std::string(r() % 300, 'x'));
      break;
    }
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  onnx::ModelProto m;
  Rng r(seed);
  if (size == 0 || !m.ParseFromArray(data, static_cast<int>(size)) || !m.has_graph() || r() % 16 == 0) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  const int rounds = 1 + static_cast<int>(r() % 3);
  for (int i = 0; i < rounds; ++i) mutate_model(m, r);
  std::string out;
  if (!m.SerializeToString(&out) || out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ws::fuzz::fuzz_model_bytes(data, size);
  return 0;
}
