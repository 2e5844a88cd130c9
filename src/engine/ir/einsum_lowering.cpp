// Einsum -> Transpose / ReduceSum / Reshape / MatMul (see einsum_lowering.h).
#include "engine/ir/einsum_lowering.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "reference/einsum.h"

namespace ws::ir {
namespace {

Result<ref::EinsumSpec> spec_of(const Graph& g, const Node& node) {
  const Attribute* eq = node.find("equation");
  std::vector<std::vector<int64_t>> shapes;
  for (TensorId id : node.inputs) {
    if (id == kNoTensor || !g.tensor(id).shape_known) return invalid_model(node.describe(g.opset) + ": an operand's shape is unknown");
    shapes.push_back(g.tensor(id).shape);
  }
  Result<ref::EinsumSpec> spec = ref::parse_einsum(eq ? eq->s : std::string(), shapes);
  if (!spec.is_ok()) return Status(spec.status().code(), node.describe(g.opset) + ": " + spec.status().message());
  return spec;
}

bool has(const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); }

// One operand as the lowering rewrites it: its tensor, its labels in storage order and its dims.
struct Operand {
  TensorId id;
  std::vector<int> labels;
  Shape dims;
};

class Emitter {
 public:
  Emitter(Graph& g, const Node& node, std::vector<Node>& out) : g_(g), node_(node), out_(out) {}

  TensorId tensor(const Shape& shape) {
    Tensor t;
    t.name = unique(node_.name + "/einsum_lowered_" + std::to_string(step_++));
    t.dtype = DType::kFloat32;
    t.shape = shape;
    t.shape_known = true;
    return g_.add_tensor(std::move(t));
  }
  TensorId int64s(const std::vector<int64_t>& v) {
    Tensor t;
    t.name = unique(node_.name + "/einsum_lowered_" + std::to_string(step_++));
    t.dtype = DType::kInt64;
    t.shape = {static_cast<int64_t>(v.size())};
    t.shape_known = true;
    t.data = std::vector<std::byte>(v.size() * sizeof(int64_t));
    if (!v.empty()) std::memcpy(t.data->data(), v.data(), v.size() * sizeof(int64_t));
    return g_.add_tensor(std::move(t));
  }
  Node& node(const char* op, std::vector<TensorId> inputs, TensorId output) {
    Node n;
    n.name = node_.name + "/einsum_lowered/" + op + "_" + std::to_string(out_.size());
    n.op_type = op;
    n.inputs = std::move(inputs);
    n.outputs = {output};
    out_.push_back(std::move(n));
    return out_.back();
  }
  void transpose(Operand& x, const std::vector<size_t>& perm) {
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == i;
    if (identity) return;
    Operand y;
    Attribute a;
    a.kind = Attribute::Kind::kInts;
    for (size_t p : perm) {
      a.ints.push_back(static_cast<int64_t>(p));
      y.labels.push_back(x.labels[p]);
      y.dims.push_back(x.dims[p]);
    }
    y.id = tensor(y.dims);
    node("Transpose", {x.id}, y.id).attributes["perm"] = a;
    x = std::move(y);
  }
  void reshape(Operand& x, const Shape& dims) {
    if (dims == x.dims) return;
    const TensorId y = tensor(dims);
    node("Reshape", {x.id, int64s(dims)}, y);
    x.id = y;
    x.dims = dims;
    x.labels.clear();  // the labels no longer map one to one onto dims
  }
  // Sums out the dims at `axes` (sorted), keepdims 0.
  void reduce_sum(Operand& x, const std::vector<size_t>& axes) {
    if (axes.empty()) return;
    Operand y;
    std::vector<int64_t> ax;
    for (size_t i = 0; i < x.dims.size(); ++i) {
      if (std::find(axes.begin(), axes.end(), i) != axes.end()) { ax.push_back(static_cast<int64_t>(i)); continue; }
      y.labels.push_back(x.labels[i]);
      y.dims.push_back(x.dims[i]);
    }
    y.id = tensor(y.dims);
    Attribute keep;
    keep.kind = Attribute::Kind::kInt;
    keep.i = 0;
    if (g_.opset >= 13) {
      node("ReduceSum", {x.id, int64s(ax)}, y.id).attributes["keepdims"] = keep;
    } else {
      Node& n = node("ReduceSum", {x.id}, y.id);
      n.attributes["keepdims"] = keep;
      Attribute a;
      a.kind = Attribute::Kind::kInts;
      a.ints = ax;
      n.attributes["axes"] = a;
    }
    x = std::move(y);
  }
  TensorId matmul(TensorId a, TensorId b, const Shape& dims) {
    const TensorId y = tensor(dims);
    node("MatMul", {a, b}, y);
    return y;
  }
  // The last emitted node writes the Einsum's output (an Identity when nothing was emitted).
  void finish(TensorId current) {
    if (out_.size() == first_ || out_.back().outputs[0] != current) {
      node("Identity", {current}, node_.outputs[0]);
      return;
    }
    out_.back().outputs[0] = node_.outputs[0];
  }
  void mark_start() { first_ = out_.size(); }

 private:
  std::string unique(const std::string& base) {
    std::string name = base;
    for (int k = 1; g_.find_tensor(name) != kNoTensor; ++k) name = base + "_" + std::to_string(k);
    return name;
  }
  Graph& g_;
  const Node& node_;
  std::vector<Node>& out_;
  int step_ = 0;
  size_t first_ = 0;
};

// Positions in x.labels of `labels`, in that order.
std::vector<size_t> positions(const Operand& x, const std::vector<int>& labels) {
  std::vector<size_t> p;
  for (int l : labels) p.push_back(static_cast<size_t>(std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin()));
  return p;
}

int64_t product(const Operand& x, const std::vector<int>& labels) {
  int64_t p = 1;
  for (size_t i : positions(x, labels)) p *= x.dims[i];
  return p;
}

}  // namespace

std::string einsum_lowering_refusal(const Graph& g, const Node& node) {
  Result<ref::EinsumSpec> r = spec_of(g, node);
  if (!r.is_ok()) return r.status().message();
  const ref::EinsumSpec& spec = r.value();
  if (spec.inputs.size() > 2)
    return std::to_string(spec.inputs.size()) + " operands (the CUDA executor lowers Einsum of one or two operands)";
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    if (g.tensor(node.inputs[k]).dtype != DType::kFloat32) return "operand " + std::to_string(k) + " is not float32";
    std::vector<int> seen;
    for (int l : spec.inputs[k]) {
      if (has(seen, l))
        return "label '" + spec.names[static_cast<size_t>(l)] + "' repeats within operand " + std::to_string(k) +
               " (a diagonal; the CUDA executor lowers Einsum to Transpose / ReduceSum / MatMul)";
      seen.push_back(l);
    }
  }
  if (spec.inputs.size() == 2) {
    const Shape& a = g.tensor(node.inputs[0]).shape;
    const Shape& b = g.tensor(node.inputs[1]).shape;
    bool equal = true, a_one = true, b_one = true;
    for (size_t i = 0; i < spec.inputs[0].size(); ++i) {
      const int l = spec.inputs[0][i];
      if (!has(spec.inputs[1], l) || !has(spec.output, l)) continue;
      const size_t j = static_cast<size_t>(std::find(spec.inputs[1].begin(), spec.inputs[1].end(), l) - spec.inputs[1].begin());
      equal = equal && a[i] == b[j];
      a_one = a_one && a[i] == 1;
      b_one = b_one && b[j] == 1;
    }
    if (!equal && !a_one && !b_one) return "batch dims that broadcast only partly (some 1, some not, in both operands)";
  }
  return {};
}

Result<int> lower_einsum(Graph& g) {
  std::vector<Node> out;
  int lowered = 0;
  for (Node& node : g.nodes) {
    if (node.op_type != "Einsum" || !einsum_lowering_refusal(g, node).empty()) {
      out.push_back(std::move(node));
      continue;
    }
    WS_ASSIGN_OR_RETURN(ref::EinsumSpec spec, spec_of(g, node));
    const Node einsum = node;  // the emitter names from it; `node` is not touched again
    Emitter e(g, einsum, out);
    e.mark_start();
    std::vector<Operand> ops;
    for (size_t k = 0; k < einsum.inputs.size(); ++k) ops.push_back({einsum.inputs[k], spec.inputs[k], g.tensor(einsum.inputs[k]).shape});
    // Labels only one operand has and the output lacks: summed out first.
    for (size_t k = 0; k < ops.size(); ++k) {
      std::vector<size_t> axes;
      for (size_t i = 0; i < ops[k].labels.size(); ++i) {
        const int l = ops[k].labels[i];
        const bool other = ops.size() == 2 && has(ops[1 - k].labels, l);
        if (!other && !has(spec.output, l)) axes.push_back(i);
      }
      e.reduce_sum(ops[k], axes);
    }
    // A contracted label of extent 1 in one operand and n in the other (numpy broadcasts it): the sum factors,
    // sum_j a[..0..] * b[..j..] = a[..0..] * sum_j b[..j..], so both operands sum that label out first.
    if (ops.size() == 2) {
      std::vector<size_t> ax0, ax1;
      for (size_t i = 0; i < ops[0].labels.size(); ++i) {
        const int l = ops[0].labels[i];
        const auto it = std::find(ops[1].labels.begin(), ops[1].labels.end(), l);
        if (it == ops[1].labels.end() || has(spec.output, l)) continue;
        const size_t j = static_cast<size_t>(it - ops[1].labels.begin());
        if (ops[0].dims[i] != ops[1].dims[j]) ax0.push_back(i), ax1.push_back(j);
      }
      std::sort(ax1.begin(), ax1.end());
      e.reduce_sum(ops[0], ax0);
      e.reduce_sum(ops[1], ax1);
    }
    if (ops.size() == 1) {
      e.transpose(ops[0], positions(ops[0], spec.output));
      e.finish(ops[0].id);
      ++lowered;
      continue;
    }
    // MatMul cannot take a constant A: swap the operands (left and right swap with them).
    if (g.tensor(ops[0].id).is_constant() && !g.tensor(ops[1].id).is_constant()) std::swap(ops[0], ops[1]);
    Operand& a = ops[0];
    Operand& b = ops[1];
    std::vector<int> batch, left, right, contract;
    for (int l : spec.output) {
      const bool in_a = has(a.labels, l), in_b = has(b.labels, l);
      if (in_a && in_b) batch.push_back(l);
      else if (in_a) left.push_back(l);
      else right.push_back(l);
    }
    for (int l : a.labels)
      if (has(b.labels, l) && !has(spec.output, l)) contract.push_back(l);
    std::vector<int> order_a = batch, order_b = batch;
    order_a.insert(order_a.end(), left.begin(), left.end());
    order_a.insert(order_a.end(), contract.begin(), contract.end());
    order_b.insert(order_b.end(), contract.begin(), contract.end());
    order_b.insert(order_b.end(), right.begin(), right.end());
    e.transpose(a, positions(a, order_a));
    e.transpose(b, positions(b, order_b));
    Shape batch_dims;  // the output's (broadcast) batch extents
    bool a_one = true, b_one = true;
    for (size_t i = 0; i < batch.size(); ++i) {
      batch_dims.push_back(a.dims[i] == 1 ? b.dims[i] : a.dims[i]);  // 1 broadcasts to the other (0 included)
      a_one = a_one && a.dims[i] == 1;
      b_one = b_one && b.dims[i] == 1;
    }
    int64_t nb = 1;
    for (int64_t d : batch_dims) nb *= d;
    const int64_t L = product(a, left), K = product(a, contract), R = product(b, right);
    Shape left_dims, right_dims;
    for (size_t i : positions(a, left)) left_dims.push_back(a.dims[i]);
    for (size_t i : positions(b, right)) right_dims.push_back(b.dims[i]);
    const bool batched = !batch.empty();
    // An operand whose batch dims are all 1 (and not the other's) goes in as a matrix: MatMul broadcasts it.
    const bool a_matrix = !batched || (a_one && !b_one);
    const bool b_matrix = !batched || (b_one && !a_one);
    e.reshape(a, a_matrix ? Shape{L, K} : Shape{nb, L, K});
    e.reshape(b, b_matrix ? Shape{K, R} : Shape{nb, K, R});
    Operand y;
    y.dims = (a_matrix && b_matrix) ? Shape{L, R} : Shape{nb, L, R};
    y.id = e.matmul(a.id, b.id, y.dims);
    Shape full = batch_dims;
    full.insert(full.end(), left_dims.begin(), left_dims.end());
    full.insert(full.end(), right_dims.begin(), right_dims.end());
    e.reshape(y, full);
    y.labels = batch;
    y.labels.insert(y.labels.end(), left.begin(), left.end());
    y.labels.insert(y.labels.end(), right.begin(), right.end());
    e.transpose(y, positions(y, spec.output));
    e.finish(y.id);
    ++lowered;
  }
  g.nodes = std::move(out);
  return lowered;
}

}  // namespace ws::ir
