#pragma once
// Heap-allocation counting for "allocates nothing" tests. alloc_counter.cpp replaces the global
// operator new/delete (every form) for the whole ws_unit_tests binary — the only definition in
// it. Counting is off by default and per thread: only allocations made on the thread that
// opened an AllocationScope, while it is open, are counted.
#include <cstdint>

namespace ws::test {

/// Counts operator new calls on this thread while alive.
class AllocationScope {
 public:
  AllocationScope();
  ~AllocationScope();
  AllocationScope(const AllocationScope&) = delete;
  AllocationScope& operator=(const AllocationScope&) = delete;
  /// Allocations (any operator new form) on this thread since construction.
  uint64_t count() const;
  /// Bytes requested by those allocations.
  uint64_t bytes() const;

 private:
  uint64_t start_count_, start_bytes_;
  bool was_enabled_;
};

/// Total bytes requested through operator new in one call, largest seen since reset (any thread).
uint64_t largest_allocation();
void reset_largest_allocation();

}  // namespace ws::test
