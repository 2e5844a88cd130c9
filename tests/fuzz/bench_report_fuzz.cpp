// libFuzzer target: the benchmark report reader used by `warpstream compare` (bench::read_report_json)
// and compare_reports over the parsed report twice (as `compare A.json A.json`). Any exception
// escaping (a field of the wrong JSON type) is a finding: the CLI would end in "internal error".
// Seeds: tests/data/bench/*.json.
#include "bench/compare.h"
#include "bench/report.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ws::fuzz::MemFile f(data, size);
  auto j = ws::bench::read_report_json(f.path());
  if (!j) { ws::fuzz::check_message(j.status()); return 0; }
  auto r = ws::bench::compare_reports({*j, *j}, {"a.json", "b.json"});
  (void)r;
  return 0;
}
