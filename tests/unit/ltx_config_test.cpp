// LtxConfig from diffusers' config.json: the 2B and 13B configs, diffusers' tiny unit-test config,
// defaults for absent fields, and one error naming the field for each refused value.
#include "flow/host/ltx_config.h"

#include <gtest/gtest.h>

namespace ws::flow {
namespace {

// As written by save_pretrained for the 13B (0.9.7) transformer (convert_ltx_to_diffusers.py).
const char* k13B = R"({
  "_class_name": "LTXVideoTransformer3DModel", "_diffusers_version": "0.34.0",
  "activation_fn": "gelu-approximate", "attention_bias": true, "attention_head_dim": 128,
  "attention_out_bias": true, "caption_channels": 4096, "cross_attention_dim": 4096, "in_channels": 128,
  "norm_elementwise_affine": false, "norm_eps": 1e-06, "num_attention_heads": 32, "num_layers": 48,
  "out_channels": 128, "patch_size": 1, "patch_size_t": 1, "qk_norm": "rms_norm_across_heads"})";

TEST(LtxConfig, Full13B) {
  Result<LtxConfig> r = parse_ltx_config(k13B, "13b/config.json");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->attention_head_dim, 128);
  EXPECT_EQ(r->num_attention_heads, 32);
  EXPECT_EQ(r->inner_dim(), 4096);
  EXPECT_EQ(r->ff_inner_dim(), 16384);
  EXPECT_EQ(r->cross_attention_dim, 4096);
  EXPECT_EQ(r->num_layers, 48);
  EXPECT_EQ(r->caption_channels, 4096);
  EXPECT_EQ(r->in_channels, 128);
  EXPECT_FLOAT_EQ(r->norm_eps, 1e-6f);
}

TEST(LtxConfig, TinyUnitTestConfigAndDefaults) {
  // diffusers' tests/models/transformers/test_models_transformer_ltx.py init dict.
  Result<LtxConfig> tiny = parse_ltx_config(R"({"in_channels": 4, "out_channels": 4, "num_attention_heads": 2,
      "attention_head_dim": 8, "cross_attention_dim": 16, "num_layers": 1, "qk_norm": "rms_norm_across_heads",
      "caption_channels": 16})", "tiny");
  ASSERT_TRUE(tiny.is_ok()) << tiny.status().to_string();
  EXPECT_EQ(tiny->in_channels, 4);
  EXPECT_EQ(tiny->inner_dim(), 16);
  EXPECT_EQ(tiny->cross_attention_dim, 16);
  EXPECT_EQ(tiny->caption_channels, 16);
  EXPECT_EQ(tiny->num_layers, 1);
  EXPECT_EQ(tiny->patch_size, 1);  // default
  // Everything absent: diffusers' defaults = the 2B config.
  Result<LtxConfig> empty = parse_ltx_config("{}", "empty");
  ASSERT_TRUE(empty.is_ok());
  EXPECT_EQ(empty->inner_dim(), 2048);
  EXPECT_EQ(empty->num_layers, 28);
  EXPECT_EQ(empty->cross_attention_dim, 2048);
}

void expect_refused(const std::string& json, StatusCode code, const std::string& needle) {
  SCOPED_TRACE(json);
  Status s = parse_ltx_config(json, "dir/config.json").status();
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find("'dir/config.json'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(needle), std::string::npos) << "missing '" << needle << "' in: " << s.message();
}

TEST(LtxConfig, RefusalsNameTheField) {
  expect_refused(R"({"activation_fn": "gelu"})", StatusCode::kUnsupported, "field 'activation_fn' is \"gelu\"");
  expect_refused(R"({"qk_norm": "layer_norm"})", StatusCode::kInvalidModel, "field 'qk_norm' is \"layer_norm\"");
  expect_refused(R"({"qk_norm": null})", StatusCode::kInvalidModel, "field 'qk_norm' is null; expected a string");
  expect_refused(R"({"num_layers": "28"})", StatusCode::kInvalidModel, "field 'num_layers' is \"28\"; expected an integer");
  expect_refused(R"({"num_attention_heads": -2})", StatusCode::kInvalidModel, "field 'num_attention_heads' is -2");
  expect_refused(R"({"attention_head_dim": 64.5})", StatusCode::kInvalidModel, "field 'attention_head_dim' is 64.5");
  expect_refused(R"({"in_channels": 0})", StatusCode::kInvalidModel, "field 'in_channels' is 0");
  expect_refused(R"({"cross_attention_dim": 99999999999})", StatusCode::kInvalidModel, "field 'cross_attention_dim'");
  expect_refused(R"({"norm_eps": 0})", StatusCode::kInvalidModel, "field 'norm_eps' is 0");
  expect_refused(R"({"norm_eps": "1e-6"})", StatusCode::kInvalidModel, "field 'norm_eps'");
  expect_refused(R"({"norm_elementwise_affine": true})", StatusCode::kUnsupported, "field 'norm_elementwise_affine' is true");
  expect_refused(R"({"attention_bias": false})", StatusCode::kUnsupported, "field 'attention_bias' is false");
  expect_refused(R"({"attention_out_bias": 1})", StatusCode::kInvalidModel, "field 'attention_out_bias' is 1; expected true or false");
  expect_refused(R"({"_class_name": "FluxTransformer2DModel"})", StatusCode::kInvalidModel, "_class_name is \"FluxTransformer2DModel\"");
  expect_refused(R"({"num_layers": 2, "num_layers": 3})", StatusCode::kInvalidModel, "key 'num_layers' appears twice");
  expect_refused("[1]", StatusCode::kInvalidModel, "must be a JSON object");
  expect_refused("{\"num_layers\": ", StatusCode::kInvalidModel, "not valid JSON");
  expect_refused("{\"activation_fn\": \"\\u001b[2J\"}", StatusCode::kUnsupported, "\"\\u001b[2J\"");
}

}  // namespace
}  // namespace ws::flow
