// Replaceable global operator new/delete that count allocations; see alloc_counter.h.
#include "support/alloc_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
thread_local bool t_enabled = false;
thread_local uint64_t t_count = 0;
thread_local uint64_t t_bytes = 0;
std::atomic<uint64_t> g_largest{0};

inline void note(std::size_t n) {
  uint64_t prev = g_largest.load(std::memory_order_relaxed);
  while (n > prev && !g_largest.compare_exchange_weak(prev, n, std::memory_order_relaxed)) {
  }
  if (t_enabled) {
    ++t_count;
    t_bytes += n;
  }
}

void* alloc(std::size_t n) {
  note(n);
  if (n == 0) n = 1;
  for (;;) {
    if (void* p = std::malloc(n)) return p;
    std::new_handler h = std::get_new_handler();
    if (!h) throw std::bad_alloc();
    h();
  }
}

void* alloc_aligned(std::size_t n, std::align_val_t al) {
  note(n);
  std::size_t a = static_cast<std::size_t>(al);
  if (a < sizeof(void*)) a = sizeof(void*);
  std::size_t size = (n + a - 1) / a * a;
  if (size == 0) size = a;
  for (;;) {
    if (void* p = std::aligned_alloc(a, size)) return p;
    std::new_handler h = std::get_new_handler();
    if (!h) throw std::bad_alloc();
    h();
  }
}
}  // namespace

void* operator new(std::size_t n) { return alloc(n); }
void* operator new[](std::size_t n) { return alloc(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try { return alloc(n); } catch (...) { return nullptr; }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try { return alloc(n); } catch (...) { return nullptr; }
}
void* operator new(std::size_t n, std::align_val_t a) { return alloc_aligned(n, a); }
void* operator new[](std::size_t n, std::align_val_t a) { return alloc_aligned(n, a); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try { return alloc_aligned(n, a); } catch (...) { return nullptr; }
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try { return alloc_aligned(n, a); } catch (...) { return nullptr; }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace ws::test {

AllocationScope::AllocationScope() : start_count_(t_count), start_bytes_(t_bytes), was_enabled_(t_enabled) {
  t_enabled = true;
}
AllocationScope::~AllocationScope() { t_enabled = was_enabled_; }
uint64_t AllocationScope::count() const { return t_count - start_count_; }
uint64_t AllocationScope::bytes() const { return t_bytes - start_bytes_; }

uint64_t largest_allocation() { return g_largest.load(std::memory_order_relaxed); }
void reset_largest_allocation() { g_largest.store(0, std::memory_order_relaxed); }

}  // namespace ws::test
