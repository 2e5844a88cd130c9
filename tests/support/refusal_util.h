#pragma once
// Shared by the refusal tests (engine_errors_test, engine_hostile_input_test): the one-node model
// they write by hand and the Status of building it, so each test states only its node and checks.
#include <string>
#include <vector>

#include "engine/ir/model_builder.h"
#include "support/engine_util.h"

/// Fails (without stopping the test) when `status`'s message lacks `text`; prints the whole status.
#define EXPECT_MESSAGE_HAS(status, text) \
  EXPECT_NE((status).message().find(text), std::string::npos) << "missing '" << (text) << "' in: " << (status).to_string()

namespace ws::test {

/// Writes into `m` a graph input "x" (float32, `x_dims`), one node `op_type` named `name` reading
/// `inputs` and writing "y", and the graph output "y". Returns the node for its attributes;
/// initializers and other nodes may still be added to `m`.
inline ir::NodeRef one_node_model(ir::ModelBuilder& m, const std::string& op_type, const std::vector<std::string>& inputs,
                                  const std::string& name, const std::vector<ir::Dim>& x_dims = {1, 4}) {
  m.input("x", ir::DType::kFloat32, x_dims);
  ir::NodeRef n = m.node(op_type, inputs, {"y"}, name);
  m.output("y");
  return n;
}

/// The Status of importing `m` (ok when it imports).
inline Status import_status(const ir::ModelBuilder& m, const ir::ImportOptions& opt = {}) {
  auto g = import_builder(m, opt);
  return g.is_ok() ? Status::ok() : g.status();
}

/// The Status of importing and building `m` on the CPU engine: ok when it builds.
inline Status build_status(const ir::ModelBuilder& m, const ir::ImportOptions& opt = {}) {
  auto e = build_engine(m, opt);
  return e.is_ok() ? Status::ok() : e.status();
}

}  // namespace ws::test
