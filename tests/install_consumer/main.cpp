// Consumer of the installed package: includes only <warpstream/...> and links ws::warpstream.
// Classifies a deterministic synthetic 40x48 RGB8 image with the demo CNN on the CPU executor and
// checks the answer against the network's own logits (Top-K = the K largest logits, descending,
// ties to the lower index). Prints "top1 <index> <score>". Exit 0 ok, 1 on any failure.
//   ws_consumer DEMO.onnx   (DEMO.onnx from `warpstream make-demo-model DEMO.onnx`)
#include <cmath>
#include <cstdio>
#include <vector>

#include <warpstream/classifier.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DEMO.onnx\n", argv[0]);
    return 1;
  }
  auto classifier = ws::CpuClassifier::build(argv[1], ws::ModelConfig{});
  if (!classifier.is_ok()) {
    std::fprintf(stderr, "build: %s\n", classifier.status().to_string().c_str());
    return 1;
  }
  ws::ImageRgb8 image;
  image.width = 48;
  image.height = 40;
  image.pixels.resize(static_cast<size_t>(image.width * image.height * 3));
  for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<uint8_t>((i * 37 + i / 7) % 256);

  constexpr int kTop = 3;
  auto top = (*classifier)->classify(image, kTop);
  if (!top.is_ok()) {
    std::fprintf(stderr, "classify: %s\n", top.status().to_string().c_str());
    return 1;
  }
  const std::vector<ws::TopKEntry>& t = *top;
  const float* logits = (*classifier)->logits();
  const int64_t classes = (*classifier)->classes();
  if (classes != 10 || t.size() != kTop) {
    std::fprintf(stderr, "expected 10 classes and %d entries, got %lld and %zu\n", kTop, static_cast<long long>(classes),
                 t.size());
    return 1;
  }
  // Expected Top-K from the logits, computed here independently: repeated argmax, ties to the lower index.
  std::vector<bool> taken(static_cast<size_t>(classes), false);
  for (int k = 0; k < kTop; ++k) {
    int best = -1;
    for (int64_t c = 0; c < classes; ++c)
      if (!taken[static_cast<size_t>(c)] && (best < 0 || logits[c] > logits[best])) best = static_cast<int>(c);
    taken[static_cast<size_t>(best)] = true;
    if (t[k].index != best || t[k].score != logits[best] || !std::isfinite(t[k].score)) {
      std::fprintf(stderr, "top[%d]: got index %d score %g, expected index %d score %g\n", k, t[k].index, t[k].score,
                   best, logits[best]);
      return 1;
    }
  }
  std::printf("top1 %d %.6f\n", t[0].index, t[0].score);
  return 0;
}
