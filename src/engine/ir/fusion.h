#pragma once
/// \file fusion.h
/// Graph fusions for executors whose kernels have richer epilogues than the ONNX ops (the CUDA executor).
/// Host-only: pure graph rewrites over ws::ir::Graph, testable without a device (tests/unit/fusion_test.cpp).

#include <set>
#include <string>

#include "warpstream/graph.h"

namespace ws::ir {

/// Folds a residual Add into the Conv that produces one of its operands: Add(conv_out, r) with r a runtime
/// float32 tensor of exactly the Add output's 4-D shape (no broadcasting), conv_out used only by the Add and
/// not a graph output, and r produced before the Conv in node order (or a graph input) so the Conv can read
/// it. Of two Conv operands the later Conv takes the Add (torchvision ResNet's downsample conv comes after
/// the main branch). The Conv then writes the Add's output and carries r as a 4th input — an internal form
/// (ONNX Conv has at most 3 inputs; a missing bias becomes kNoTensor), so callers validate the node with its
/// first 3 inputs — and its epilogue must compute conv + bias + r. The Add node is removed.
/// Expects inferred shapes (run ir::optimize first: a tensor of unknown shape never fuses).
/// Returns the names of the Convs that took a residual. Never fails: anything else is left untouched.
std::set<std::string> fuse_conv_residual_adds(Graph& g);

}  // namespace ws::ir
