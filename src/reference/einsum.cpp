// Einsum: equation parser and the direct CPU evaluation (see einsum.h for the grammar and the errors).
#include "reference/einsum.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>

#include "core/escape.h"

namespace ws::ref {
namespace {

constexpr size_t kMaxEinsumRank = 12;
constexpr size_t kMaxEinsumOperands = 16;

struct Term {
  std::vector<char> letters_before;  // letters left of "..." (all letters when there is none)
  std::vector<char> letters_after;   // letters right of "..."
  bool ellipsis = false;
};

bool is_label(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

Result<Term> parse_term(const std::string& t, const std::string& where) {
  Term term;
  for (size_t i = 0; i < t.size(); ++i) {
    const char ch = t[i];
    if (is_label(ch)) {
      (term.ellipsis ? term.letters_after : term.letters_before).push_back(ch);
    } else if (ch == '.') {
      if (t.compare(i, 3, "...") != 0) return invalid_model(where + ": '.' outside an ellipsis '...'");
      if (term.ellipsis) return invalid_model(where + ": more than one ellipsis '...'");
      term.ellipsis = true;
      i += 2;
    } else {
      return invalid_model(where + ": character " + quoted(std::string(1, ch)) + " is not a label (a-z, A-Z) or '...'");
    }
  }
  return term;
}

}  // namespace

std::vector<int64_t> EinsumSpec::output_shape() const {
  std::vector<int64_t> s;
  for (int l : output) s.push_back(sizes[static_cast<size_t>(l)]);
  return s;
}

int64_t EinsumSpec::work() const {
  int64_t w = 1;
  for (int64_t s : sizes) {
    if (s == 0) return 0;
    if (w > std::numeric_limits<int64_t>::max() / s) return std::numeric_limits<int64_t>::max();
    w *= s;
  }
  return w;
}

Result<EinsumSpec> parse_einsum(const std::string& equation, const std::vector<std::vector<int64_t>>& shapes) {
  std::string eq;
  for (char ch : equation)
    if (ch != ' ') eq += ch;
  const std::string what = "equation " + quoted(equation);
  if (shapes.empty() || shapes.size() > kMaxEinsumOperands)
    return invalid_model(what + ": " + std::to_string(shapes.size()) + " operands (1 to " +
                         std::to_string(kMaxEinsumOperands) + " supported)");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  if (arrow != std::string::npos && eq.find("->", arrow + 2) != std::string::npos)
    return invalid_model(what + ": more than one '->'");
  std::vector<std::string> terms(1);
  for (char ch : lhs) {
    if (ch == ',') terms.emplace_back();
    else terms.back() += ch;
  }
  if (terms.size() != shapes.size())
    return invalid_model(what + " has " + std::to_string(terms.size()) + " input terms for " +
                         std::to_string(shapes.size()) + " operands");
  std::vector<Term> parsed;
  size_t ellipsis_rank = 0;
  bool any_ellipsis = false;
  for (size_t k = 0; k < terms.size(); ++k) {
    const std::string where = what + ", term " + std::to_string(k);
    WS_ASSIGN_OR_RETURN(Term t, parse_term(terms[k], where));
    const size_t letters = t.letters_before.size() + t.letters_after.size();
    const size_t rank = shapes[k].size();
    if (rank > kMaxEinsumRank) return invalid_model(where + ": operand rank " + std::to_string(rank) + " above 12");
    if (letters > rank || (!t.ellipsis && letters != rank))
      return invalid_model(where + ": " + std::to_string(letters) + " labels for an operand of rank " + std::to_string(rank));
    if (t.ellipsis) {
      any_ellipsis = true;
      ellipsis_rank = std::max(ellipsis_rank, rank - letters);
    }
    parsed.push_back(std::move(t));
  }
  EinsumSpec spec;
  // Ellipsis labels 0..E-1, then the letters in order of first appearance.
  for (size_t e = 0; e < ellipsis_rank; ++e) {
    spec.names.push_back("..." + std::to_string(e));
    spec.sizes.push_back(-1);
  }
  std::map<char, int> letter_id;
  std::map<char, int> letter_uses;
  auto label_of = [&](char ch) {
    auto [it, inserted] = letter_id.emplace(ch, static_cast<int>(spec.sizes.size()));
    if (inserted) {
      spec.names.emplace_back(1, ch);
      spec.sizes.push_back(-1);
    }
    return it->second;
  };
  for (size_t k = 0; k < parsed.size(); ++k) {
    const Term& t = parsed[k];
    const std::vector<int64_t>& shape = shapes[k];
    const size_t e_k = shape.size() - t.letters_before.size() - t.letters_after.size();
    std::vector<int> labels;
    for (char ch : t.letters_before) labels.push_back(label_of(ch)), letter_uses[ch]++;
    for (size_t e = 0; e < e_k; ++e) labels.push_back(static_cast<int>(ellipsis_rank - e_k + e));
    for (char ch : t.letters_after) labels.push_back(label_of(ch)), letter_uses[ch]++;
    for (size_t d = 0; d < labels.size(); ++d) {
      int64_t& size = spec.sizes[static_cast<size_t>(labels[d])];
      const int64_t dim = shape[d];
      if (dim < 0) return invalid_model(what + ", operand " + std::to_string(k) + ": unknown dim " + std::to_string(d));
      // A label repeated within this operand (a diagonal) must have one extent there (numpy refuses 1 vs n).
      for (size_t e = 0; e < d; ++e)
        if (labels[e] == labels[d] && shape[e] != dim)
          return invalid_model(what + ": label " + quoted(spec.names[static_cast<size_t>(labels[d])]) +
                               " is repeated in operand " + std::to_string(k) + " with extents " +
                               std::to_string(shape[e]) + " and " + std::to_string(dim) + " (a diagonal needs one extent)");
      // Across operands every label broadcasts from 1, named or ellipsis (numpy.einsum and ONNX Runtime do).
      if (size < 0 || size == 1) {
        size = dim;
      } else if (dim != size && dim != 1) {
        return invalid_model(what + ": label " + quoted(spec.names[static_cast<size_t>(labels[d])]) + " is " +
                             std::to_string(size) + " in one place and " + std::to_string(dim) + " in operand " +
                             std::to_string(k) + " dim " + std::to_string(d) + " (extents must agree or be 1)");
      }
    }
    spec.inputs.push_back(std::move(labels));
  }
  if (arrow == std::string::npos) {
    for (size_t e = 0; e < ellipsis_rank; ++e) spec.output.push_back(static_cast<int>(e));
    for (const auto& [ch, uses] : letter_uses)  // std::map: ASCII order, upper case first (numpy's order)
      if (uses == 1) spec.output.push_back(letter_id[ch]);
  } else {
    const std::string where = what + ", output term";
    WS_ASSIGN_OR_RETURN(Term t, parse_term(eq.substr(arrow + 2), where));
    if (any_ellipsis && ellipsis_rank > 0 && !t.ellipsis)
      return invalid_model(where + ": the inputs have '...' dims but the output does not name '...'");
    std::vector<bool> used(spec.sizes.size(), false);
    auto add = [&](char ch) -> Status {
      auto it = letter_id.find(ch);
      if (it == letter_id.end()) return invalid_model(where + ": label " + quoted(std::string(1, ch)) + " is in no input");
      if (used[static_cast<size_t>(it->second)])
        return invalid_model(where + ": label " + quoted(std::string(1, ch)) + " appears twice");
      used[static_cast<size_t>(it->second)] = true;
      spec.output.push_back(it->second);
      return Status::ok();
    };
    for (char ch : t.letters_before) WS_RETURN_IF_ERROR(add(ch));
    if (t.ellipsis)
      for (size_t e = 0; e < ellipsis_rank; ++e) spec.output.push_back(static_cast<int>(e));
    for (char ch : t.letters_after) WS_RETURN_IF_ERROR(add(ch));
  }
  if (spec.sizes.size() > 64) return invalid_model(what + ": more than 64 labels");
  for (size_t k = 0; k < shapes.size(); ++k) {
    std::vector<int64_t> st(spec.sizes.size(), 0);
    int64_t s = 1;
    for (size_t d = shapes[k].size(); d-- > 0;) {
      const size_t l = static_cast<size_t>(spec.inputs[k][d]);
      if (!(shapes[k][d] == 1 && spec.sizes[l] != 1)) st[l] += s;  // a broadcast dim of 1 reads element 0
      s *= std::max<int64_t>(shapes[k][d], 1);
    }
    spec.strides.push_back(std::move(st));
  }
  return spec;
}

template <typename T>
void einsum(const EinsumSpec& spec, std::span<const T* const> inputs, T* out) {
  const size_t nk = inputs.size();
  // Odometer over every label, output labels outermost (in output order: the output is written in row-major
  // order, one element per completed inner sweep), the summed labels inside.
  std::array<int, 64> order{};
  size_t no = 0, nl = 0;
  std::array<bool, 64> in_out{};
  for (int l : spec.output) order[nl++] = l, in_out[static_cast<size_t>(l)] = true;
  no = nl;
  for (size_t l = 0; l < spec.sizes.size(); ++l)
    if (!in_out[l]) order[nl++] = static_cast<int>(l);
  int64_t out_count = 1, sum_count = 1;
  for (size_t i = 0; i < nl; ++i) (i < no ? out_count : sum_count) *= spec.sizes[static_cast<size_t>(order[i])];
  if (out_count == 0) return;
  std::array<int64_t, 64> idx{};
  std::array<int64_t, kMaxEinsumOperands> off{};
  for (int64_t o = 0; o < out_count; ++o) {
    double acc = 0;
    for (int64_t r = 0; r < sum_count; ++r) {
      double p = 1;
      for (size_t k = 0; k < nk; ++k) p *= static_cast<double>(inputs[k][off[k]]);
      acc += p;
      // Advance the summed labels (innermost last); on a full wrap the output labels advance below.
      for (size_t i = nl; i-- > no;) {
        const size_t l = static_cast<size_t>(order[i]);
        for (size_t k = 0; k < nk; ++k) off[k] += spec.strides[k][l];
        if (++idx[l] < spec.sizes[l]) break;
        for (size_t k = 0; k < nk; ++k) off[k] -= spec.strides[k][l] * spec.sizes[l];
        idx[l] = 0;
      }
    }
    out[o] = static_cast<T>(acc);
    for (size_t i = no; i-- > 0;) {
      const size_t l = static_cast<size_t>(order[i]);
      for (size_t k = 0; k < nk; ++k) off[k] += spec.strides[k][l];
      if (++idx[l] < spec.sizes[l]) break;
      for (size_t k = 0; k < nk; ++k) off[k] -= spec.strides[k][l] * spec.sizes[l];
      idx[l] = 0;
    }
  }
}

template void einsum<float>(const EinsumSpec&, std::span<const float* const>, float*);
template void einsum<double>(const EinsumSpec&, std::span<const double* const>, double*);

}  // namespace ws::ref
