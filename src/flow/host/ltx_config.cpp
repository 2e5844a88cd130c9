// LTX-Video config.json -> LtxConfig; see ltx_config.h.
#include "flow/host/ltx_config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>
#include <vector>

#include "core/json_parse.h"
#include "warpstream/safetensors.h"  // escape_for_message

namespace ws::flow {
namespace {

using nlohmann::json;

std::string q(std::string_view s) {
  std::string out(1, '\'');
  out += io::escape_for_message(s);
  out.push_back('\'');
  return out;
}

std::string shown(const json& v) {
  std::string s = v.dump();
  if (s.size() > 64) s = s.substr(0, 61) + "...";
  return io::escape_for_message(s);
}

}  // namespace

Result<LtxConfig> parse_ltx_config(std::string_view json_text, const std::string& source) {
  const std::string where = "LTX config " + q(source) + ": ";
  JsonParseOptions po;
  po.refuse_duplicate_keys = true;
  po.code = StatusCode::kInvalidModel;
  WS_ASSIGN_OR_RETURN(json doc, parse_json_bounded(json_text, where.substr(0, where.size() - 2), po));
  if (!doc.is_object()) return invalid_model(where + "must be a JSON object, got " + doc.type_name());

  LtxConfig c;
  if (auto it = doc.find("_class_name"); it != doc.end()) {
    if (!it->is_string() || it->get<std::string>() != "LTXVideoTransformer3DModel")
      return invalid_model(where + "_class_name is " + shown(*it) + ", expected \"LTXVideoTransformer3DModel\"");
  }
  struct IntField { const char* name; int64_t* value; };
  const IntField ints[] = {
      {"in_channels", &c.in_channels},           {"out_channels", &c.out_channels},
      {"patch_size", &c.patch_size},             {"patch_size_t", &c.patch_size_t},
      {"num_attention_heads", &c.num_attention_heads}, {"attention_head_dim", &c.attention_head_dim},
      {"cross_attention_dim", &c.cross_attention_dim}, {"num_layers", &c.num_layers},
      {"caption_channels", &c.caption_channels},
  };
  constexpr int64_t kMaxInt = int64_t{1} << 20;
  for (const IntField& f : ints) {
    auto it = doc.find(f.name);
    if (it == doc.end()) continue;
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > kMaxInt)
      return invalid_model(where + "field '" + f.name + "' is " + shown(*it) + "; expected an integer in [1, " +
                           std::to_string(kMaxInt) + "]");
    *f.value = it->get<int64_t>();
  }
  if (auto it = doc.find("norm_eps"); it != doc.end()) {
    if (!it->is_number() || !(it->get<double>() > 0.0) || !(it->get<double>() < 1.0))
      return invalid_model(where + "field 'norm_eps' is " + shown(*it) + "; expected a number in (0, 1)");
    c.norm_eps = static_cast<float>(it->get<double>());
  }
  struct StringField { const char* name; const char* only; StatusCode code; };
  const StringField strings[] = {
      {"activation_fn", "gelu-approximate", StatusCode::kUnsupported},
      {"qk_norm", "rms_norm_across_heads", StatusCode::kInvalidModel},
  };
  for (const StringField& f : strings) {
    auto it = doc.find(f.name);
    if (it == doc.end()) continue;
    if (!it->is_string()) return invalid_model(where + "field '" + f.name + "' is " + shown(*it) + "; expected a string");
    if (it->get<std::string>() != f.only)
      return Status(f.code, where + "field '" + f.name + "' is " + shown(*it) + "; only \"" + f.only + "\" is supported");
  }
  struct BoolField { const char* name; bool* value; bool required; };
  bool affine = false;
  const BoolField bools[] = {
      {"norm_elementwise_affine", &affine, false},
      {"attention_bias", &c.attention_bias, true},
      {"attention_out_bias", &c.attention_out_bias, true},
  };
  for (const BoolField& f : bools) {
    auto it = doc.find(f.name);
    if (it == doc.end()) continue;
    if (!it->is_boolean()) return invalid_model(where + "field '" + f.name + "' is " + shown(*it) + "; expected true or false");
    *f.value = it->get<bool>();
    if (*f.value != f.required)
      return unsupported(where + "field '" + f.name + "' is " + (*f.value ? "true" : "false") + "; only " +
                         (f.required ? "true" : "false") + " is supported (diffusers' LTX-Video checkpoints)");
  }
  return c;
}

}  // namespace ws::flow
