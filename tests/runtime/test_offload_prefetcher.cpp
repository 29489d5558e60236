// The prefetcher's two rules (SPEC 4), each with a test that fails if the rule is broken: a slow
// copy that compute would catch half-done if wait() returned early, and a slow compute whose
// slot the copy thread would overwrite if it did not wait for release().
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/cpu_backend.hpp"
#include "runtime/offload_prefetcher.hpp"

using namespace infer_plan::runtime;

namespace {

// G groups of distinct bytes: group g, byte i = (g * 37 + i * 11 + 1) mod 251, never 0.
std::vector<std::vector<uint8_t>> make_groups(uint64_t G, uint64_t bytes) {
  std::vector<std::vector<uint8_t>> groups(G, std::vector<uint8_t>(bytes));
  for (uint64_t g = 0; g < G; ++g)
    for (uint64_t i = 0; i < bytes; ++i) groups[g][i] = static_cast<uint8_t>((g * 37 + i * 11 + 1) % 251);
  return groups;
}

std::vector<OffloadGroupSource> sources(const std::vector<std::vector<uint8_t>>& groups) {
  std::vector<OffloadGroupSource> s;
  for (const auto& g : groups) s.push_back({g.data(), g.size()});
  return s;
}

// Bytes of `slot` that differ from `expected`; prints the first.
uint64_t mismatches(const uint8_t* slot, const std::vector<uint8_t>& expected) {
  uint64_t bad = 0;
  for (uint64_t i = 0; i < expected.size(); ++i)
    if (slot[i] != expected[i] && bad++ == 0)
      MESSAGE("first mismatch at byte " << i << ": " << int(slot[i]) << " != " << int(expected[i]));
  return bad;
}

}  // namespace

TEST_CASE("rule 1: compute reads a slot only after its copy completed (a slow copy)") {
  for (uint64_t slots : {1, 2, 3}) {
    CAPTURE(slots);
    CpuBackend backend;
    const auto groups = make_groups(3, 4096);
    // The copy writes 16 pieces with a pause after each: a slot read mid-copy holds a mix of
    // this group's bytes and the previous group's (or uninitialised) bytes.
    auto slow_copy = [](void* dst, const void* src, uint64_t bytes) {
      for (uint64_t p = 0; p < 16; ++p) {
        std::memcpy(static_cast<uint8_t*>(dst) + p * bytes / 16, static_cast<const uint8_t*>(src) + p * bytes / 16, bytes / 16);
        std::this_thread::sleep_for(std::chrono::microseconds(150));
      }
    };
    OffloadPrefetcher pf(backend, sources(groups), slots, 4096, slow_copy);
    CHECK(backend.allocated(MemoryCategory::offload_buffers) == slots * 4096);
    uint64_t bad = 0;
    for (int pass = 0; pass < 4; ++pass) {
      for (uint64_t g = 0; g < 3; ++g) {
        bad += mismatches(pf.wait(g), groups[g]);
        pf.release(g);
      }
      const OffloadPassRecord r = pf.last_pass();
      CHECK(r.bytes == 3 * 4096);
      CHECK(r.copy_s >= 3 * 16 * 150e-6);  // at least the pauses of its three copies
      CHECK(r.wait_s > 0);                 // compute is faster than this copy: it waited
    }
    CHECK(bad == 0);
  }
  CpuBackend backend;  // ...and the slots are freed with the prefetcher
  { OffloadPrefetcher pf(backend, sources(make_groups(2, 64)), 2, 64); }
  CHECK(backend.allocated(MemoryCategory::offload_buffers) == 0);
}

TEST_CASE("rule 2: a slot is overwritten only after compute released it (a slow compute)") {
  for (uint64_t slots : {1, 2}) {
    CAPTURE(slots);
    CpuBackend backend;
    const auto groups = make_groups(3, 4096);
    // The test marks the slot it holds; the copy counts writes into a held slot.
    std::mutex held_mutex;
    const uint8_t* held = nullptr;
    std::atomic<int> overwrites_in_use{0}, copies{0};
    auto checked_copy = [&](void* dst, const void* src, uint64_t bytes) {
      {
        std::lock_guard lock(held_mutex);
        if (dst == held) ++overwrites_in_use;
      }
      std::memcpy(dst, src, bytes);
      ++copies;
    };
    OffloadPrefetcher pf(backend, sources(groups), slots, 4096, checked_copy);
    uint64_t bad = 0;
    for (int pass = 0; pass < 3; ++pass)
      for (uint64_t g = 0; g < 3; ++g) {
        const uint8_t* slot = pf.wait(g);
        {
          std::lock_guard lock(held_mutex);
          held = slot;
        }
        // Compute "runs" 2 ms; a copy thread ignoring release would have overwritten the slot.
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        bad += mismatches(slot, groups[g]);
        {
          std::lock_guard lock(held_mutex);
          held = nullptr;
        }
        pf.release(g);
      }
    CHECK(overwrites_in_use == 0);
    CHECK(bad == 0);
    // The copy runs ahead exactly as far as the slots allow: 9 tickets consumed, and after the
    // last release `slots` more (the next passes' first groups) may have been copied.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(copies == static_cast<int>(9 + slots));
  }
}

TEST_CASE("the first group of the next pass is copied while the current pass finishes") {
  CpuBackend backend;
  const auto groups = make_groups(2, 256);
  std::atomic<int> copies{0};
  OffloadPrefetcher pf(backend, sources(groups), 2, 256, [&](void* d, const void* s, uint64_t n) {
    std::memcpy(d, s, n);
    ++copies;
  });
  pf.wait(0);
  pf.release(0);  // slot 0 is free: ticket 2 (pass 1, group 0) may go there
  pf.wait(1);     // pass 0's last group, still held
  for (int i = 0; i < 200 && copies < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(copies == 3);
  pf.release(1);
  CHECK(mismatches(pf.wait(0), groups[0]) == 0);
  pf.release(0);
}

TEST_CASE("out-of-order use is a logic error, and a group larger than a slot is refused") {
  CpuBackend backend;
  const auto groups = make_groups(3, 128);
  OffloadPrefetcher pf(backend, sources(groups), 1, 128);
  CHECK_THROWS_AS(pf.wait(1), std::logic_error);     // group 0 is next
  CHECK_THROWS_AS(pf.release(0), std::logic_error);  // not held
  pf.wait(0);
  CHECK_THROWS_AS(pf.wait(1), std::logic_error);  // the only slot is held: it would never come
  pf.release(0);
  CHECK_THROWS_AS(OffloadPrefetcher(backend, sources(groups), 2, 64), std::logic_error);
}

TEST_CASE("a failed copy reaches compute as the copy's exception") {
  CpuBackend backend;
  const auto groups = make_groups(1, 64);
  OffloadPrefetcher pf(backend, sources(groups), 1, 64,
                       [](void*, const void*, uint64_t) { throw std::runtime_error("copy failed"); });
  CHECK_THROWS_WITH_AS(pf.wait(0), "copy failed", std::runtime_error);
}
