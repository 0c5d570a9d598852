// buffer_pool_bench.cpp - micro-benchmarks of the buffer pool's paths (not a
// test). Target: allocate + release of a 64-byte buffer on one thread ~20 ns.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <vector>

#include "buffer/buffer_pool.hpp"

namespace {

rocl::impl::BufferPool &pool() {
  static rocl::impl::BufferPool p{rocl::impl::PoolConfig{}};
  return p;
}

// One buffer allocated and released again: the thread cache's fast path.
void BM_AllocRelease(benchmark::State &state) {
  const auto len = static_cast<std::size_t>(state.range(0));
  rocl::impl::BufferPool &p = pool();
  for (auto _ : state) {
    rocl::impl::BlockHeader *b = p.allocate(len);
    benchmark::DoNotOptimize(b);
    p.release(b, rocl::impl::BlockState::kUser);
  }
}
BENCHMARK(BM_AllocRelease)->Arg(64)->Arg(4000)->Arg(60000)->Arg(1 << 20)->Arg(32 << 20);
BENCHMARK(BM_AllocRelease)->Arg(64)->Threads(2)->UseRealTime();

// Many buffers held at once: refills and flushes between the thread cache and
// the global lists. Time per allocate + release pair.
void BM_AllocManyThenRelease(benchmark::State &state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  rocl::impl::BufferPool &p = pool();
  std::vector<rocl::impl::BlockHeader *> blocks(n);
  for (auto _ : state) {
    for (auto &b : blocks) b = p.allocate(64);
    for (auto *b : blocks) p.release(b, rocl::impl::BlockState::kUser);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_AllocManyThenRelease)->Arg(100)->Arg(1000)->Arg(10000);

// The same lookup the core does on every rocl_bfret / rocl_bfstat.
void BM_Find(benchmark::State &state) {
  rocl::impl::BufferPool &p = pool();
  rocl::impl::BlockHeader *b = p.allocate(64);
  void *payload = rocl::impl::payload_of(b);
  for (auto _ : state) benchmark::DoNotOptimize(p.find(payload));
  p.release(b, rocl::impl::BlockState::kUser);
}
BENCHMARK(BM_Find);

// For comparison.
void BM_MallocFree(benchmark::State &state) {
  const auto len = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void *q = std::malloc(len);
    benchmark::DoNotOptimize(q);
    std::free(q);
  }
}
BENCHMARK(BM_MallocFree)->Arg(64 + 192);

}  // namespace

BENCHMARK_MAIN();
