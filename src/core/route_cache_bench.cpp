// route_cache_bench.cpp - micro-benchmarks of the cached lookup (resource ->
// context -> transport and address, RoCL section 4.1) that every send to a
// resource of another process makes (not a test). Goal: under 0.2 us.
#include <benchmark/benchmark.h>

#include <string>

#include "core/route_cache.hpp"

namespace {

using rocl::impl::Route;
using rocl::impl::RouteCache;

// A cache of n routes (n resources of n/4 contexts), the routes' gids
// spread as a job's are.
RouteCache &cache(int n) {
  static RouteCache c;
  static int filled = 0;
  for (; filled < n; ++filled) {
    Route r;
    r.context = 0x0002000000000000ull + static_cast<rocl_gid_t>(filled / 4) + 1;
    r.address = c.intern("tcp:10.201.0.2:" + std::to_string(40000 + filled / 4));
    r.bytes_send_limit = 4096;
    c.store(0x0002000000100000ull + static_cast<rocl_gid_t>(filled), r, 7);
  }
  return c;
}

// The same destination again and again: the thread's last entry.
void BM_CachedLookupSame(benchmark::State &state) {
  RouteCache &c = cache(static_cast<int>(state.range(0)));
  Route r;
  for (auto _ : state) {
    benchmark::DoNotOptimize(c.lookup(0x0002000000100003ull, 7, &r));
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_CachedLookupSame)->Arg(1000);

// A different destination every time: the shared map under its lock.
void BM_CachedLookupSpread(benchmark::State &state) {
  const int n = static_cast<int>(state.range(0));
  RouteCache &c = cache(n);
  Route r;
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(c.lookup(0x0002000000100000ull + static_cast<rocl_gid_t>(i), 7, &r));
    benchmark::DoNotOptimize(r);
    i = i + 1 == n ? 0 : i + 1;
  }
}
BENCHMARK(BM_CachedLookupSpread)->Arg(1000);
BENCHMARK(BM_CachedLookupSpread)->Arg(1000)->Threads(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
