// libFuzzer target: PNG / JPEG decoding (ws::decode_image_file, libpng + libjpeg through
// src/io/image.cpp) from an in-memory file. The pixel limit (kMaxImagePixels) bounds memory.
// Seeds: small PNG/JPEG photos (tests/fuzz/seeds/image).
#include "fuzz_common.h"
#include "warpstream/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ws::fuzz::set_fuzz_limits();
  ws::fuzz::MemFile f(data, size);
  auto img = ws::decode_image_file(f.path());
  if (!img) { ws::fuzz::check_message(img.status()); return 0; }
  if (img->pixels.size() != static_cast<size_t>(img->width) * static_cast<size_t>(img->height) * 3) std::abort();
  return 0;
}
