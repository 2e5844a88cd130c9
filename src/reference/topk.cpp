// topk.cpp — the K (<= kMaxTopK) largest logits, descending, as ONNX TopK-11 with largest=1,
// sorted=1 (ties → lower index), except that NaN ranks as -inf (a NaN is chosen only when fewer
// than K other values exist, and NaN ties with -inf: lower index first); a chosen NaN keeps its
// NaN score. One pass with an insertion-sorted list of K entries (what one GPU thread/warp does).

#include <cmath>
#include <limits>
#include <string>

#include "reference/reference.h"

namespace ws::ref {

Status topk(const float* logits, int64_t classes, int k, TopKEntry* out) {
  if (k < 1) return invalid_argument("top-k: K = " + std::to_string(k) + " must be >= 1");
  if (k > kMaxTopK)
    return invalid_argument("top-k: K = " + std::to_string(k) + " exceeds the maximum " + std::to_string(kMaxTopK));
  if (k > classes)
    return invalid_argument("top-k: K = " + std::to_string(k) + " exceeds the number of classes " +
                            std::to_string(classes));
  float keys[kMaxTopK];  // rank keys (NaN → -inf), descending, parallel to out[]
  int count = 0;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < classes; ++i) {
    const float v = logits[i];
    const float key = std::isnan(v) ? neg_inf : v;
    // Indices arrive in increasing order, so a new entry goes after every equal key.
    if (count == k && !(key > keys[k - 1])) continue;
    int pos = count < k ? count : k - 1;
    while (pos > 0 && key > keys[pos - 1]) {
      keys[pos] = keys[pos - 1];
      out[pos] = out[pos - 1];
      --pos;
    }
    keys[pos] = key;
    out[pos] = TopKEntry{v, static_cast<int32_t>(i)};
    if (count < k) ++count;
  }
  return Status::ok();
}

}  // namespace ws::ref
