// all_pairs: run under roclrun -n P (on one host or several): T threads per
// process (ALL_PAIRS_THREADS, default 4), each a resource {type=all-pairs,
// id=<rank>.<thread>}. Every thread waits until all P*T are registered
// (rocl_query_wait), sends K small messages (ALL_PAIRS_MESSAGES, default
// 50) to every other thread, each carrying its sender and a sequence
// number, and thread 0 of each process sends one large message
// (ALL_PAIRS_LARGE_MB, default 64; 0: none) to thread 0 of the next
// process. Every thread receives until it has had everything sent to it,
// checking exactly once and in order per sender and the large message's
// bytes. Then a last message per pair says "done" so that no thread leaves
// while a message for it may still be on its way. Exit 0 on success.
#include <rocl/rocl.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

int env(const char *name, int fallback) {
  const char *v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

struct Small {
  std::int32_t rank, thread;
  std::int64_t seq;
};

std::atomic<int> g_failures{0};
int g_rank = 0;

void fail(int thread, const std::string &what) {
  std::fprintf(stderr, "all_pairs rank %d thread %d: %s\n", g_rank, thread, what.c_str());
  g_failures.fetch_add(1);
}

unsigned char byte_at(std::size_t i, int from_rank) {
  return static_cast<unsigned char>((i * 131 + static_cast<std::size_t>(from_rank) * 7) >> 3);
}

constexpr int kSmallTag = 1, kLargeTag = 2, kDoneTag = 3;

void worker(int rank, int size, int thread, int threads, int messages, int large_mb) {
  try {
    rocl::Resource me(
        {{"type", "all-pairs"}, {"id", std::to_string(rank) + "." + std::to_string(thread)}});
    const int everyone = size * threads;
    const auto all = rocl::query_wait(rocl::Attributes{{"type", "all-pairs"}}.ask("id", 16),
                                      everyone, std::chrono::seconds(60));
    std::map<std::string, rocl::gid_t> gid_of;
    for (const auto &f : all) gid_of[f.attributes.get("id").value_or("")] = f.gid;
    auto gid = [&](int r, int t) { return gid_of.at(std::to_string(r) + "." + std::to_string(t)); };
    // Small messages to every other thread, round-robin over destinations.
    for (int k = 0; k < messages; ++k) {
      for (int r = 0; r < size; ++r) {
        for (int t = 0; t < threads; ++t) {
          if (r == rank && t == thread) continue;
          const Small s{rank, thread, k};
          me.send(gid(r, t), kSmallTag, std::as_bytes(std::span(&s, 1)));
        }
      }
    }
    const bool sends_large = large_mb > 0 && thread == 0 && size > 1;
    if (sends_large) {
      const std::size_t n = static_cast<std::size_t>(large_mb) << 20;
      rocl::Buffer b = rocl::Buffer::get(n);
      auto *p = reinterpret_cast<unsigned char *>(b.data());
      for (std::size_t i = 0; i < n; ++i) p[i] = byte_at(i, rank);
      me.send(gid((rank + 1) % size, 0), kLargeTag, std::move(b));
    }
    // Receive what everyone sent.
    std::map<std::pair<int, int>, std::int64_t> next;  // sender -> expected seq
    const long expect_small = static_cast<long>(everyone - 1) * messages;
    const bool gets_large = large_mb > 0 && thread == 0 && size > 1;
    long got_small = 0;
    bool got_large = false;
    std::vector<rocl::gid_t> done_from;  // dones that came early
    std::map<rocl::gid_t, std::pair<int, int>> who;
    for (const auto &[id, g] : gid_of) {
      const auto dot = id.find('.');
      who[g] = {std::atoi(id.substr(0, dot).c_str()), std::atoi(id.substr(dot + 1).c_str())};
    }
    auto check_done = [&](rocl::gid_t from) {
      const auto [r, t] = who.at(from);
      if (next[{r, t}] != messages) {
        fail(thread, "done from " + std::to_string(r) + "." + std::to_string(t) + " after " +
                         std::to_string(next[{r, t}]) + " of its " + std::to_string(messages) +
                         " messages (overtaken)");
      }
    };
    while (got_small < expect_small || (gets_large && !got_large)) {
      auto m = me.recv(rocl::any_gid, rocl::any_tag, std::chrono::seconds(60));
      if (!m) {
        fail(thread, "nothing came for 60 s after " + std::to_string(got_small) + " of " +
                         std::to_string(expect_small) + " small messages");
        return;
      }
      if (m->tag == kSmallTag) {
        Small s{};
        if (m->buffer.size() != sizeof s) {
          fail(thread, "a small message of " + std::to_string(m->buffer.size()) + " bytes");
          continue;
        }
        std::memcpy(&s, m->buffer.data(), sizeof s);
        std::int64_t &want = next[{s.rank, s.thread}];
        if (s.seq != want) {
          fail(thread, "from " + std::to_string(s.rank) + "." + std::to_string(s.thread) +
                           ": seq " + std::to_string(s.seq) + " where " + std::to_string(want) +
                           " was due (lost, duplicated or out of order)");
        }
        want = s.seq + 1;
        ++got_small;
      } else if (m->tag == kLargeTag) {
        const int from = (rank + size - 1) % size;
        const std::size_t n = static_cast<std::size_t>(large_mb) << 20;
        const auto *p = reinterpret_cast<const unsigned char *>(m->buffer.data());
        bool ok = m->buffer.size() == n;
        for (std::size_t i = 0; ok && i < n; i += 4093) ok = p[i] == byte_at(i, from);
        if (!ok) fail(thread, "the large message is not what was sent");
        if (got_large) fail(thread, "a second large message");
        got_large = true;
      } else if (m->tag == kDoneTag) {
        // A sender that is done sent all it had for us before: per pair,
        // nothing may overtake.
        done_from.push_back(m->origin);
      }
    }
    for (rocl::gid_t from : done_from) check_done(from);
    // Done: each thread tells every other, then waits for all of theirs.
    for (int r = 0; r < size; ++r) {
      for (int t = 0; t < threads; ++t) {
        if (r != rank || t != thread) me.send(gid(r, t), kDoneTag, std::string_view("done"));
      }
    }
    for (int k = static_cast<int>(done_from.size()); k < everyone - 1; ++k) {
      auto m = me.recv(rocl::any_gid, kDoneTag, std::chrono::seconds(60));
      if (!m) {
        fail(thread, "no done from everyone within 60 s");
        return;
      }
      check_done(m->origin);
    }
    if (thread == 0 && rank == 0) {
      std::printf("all_pairs: %d processes x %d threads, %d messages per pair%s: ok\n", size,
                  threads, messages,
                  large_mb > 0
                      ? (" and " + std::to_string(large_mb) + " MiB per process pair").c_str()
                      : "");
    }
  } catch (const rocl::Error &e) {
    fail(thread, e.what());
  }
}

}  // namespace

int main() try {
  const int threads = env("ALL_PAIRS_THREADS", 4);
  const int messages = env("ALL_PAIRS_MESSAGES", 50);
  const int large_mb = env("ALL_PAIRS_LARGE_MB", 64);
  rocl::Context context;
  // After the context: a process that mpirun or srun started learns its
  // rank there (PMIx).
  g_rank = env("ROCL_RANK", 0);
  const int size = env("ROCL_SIZE", 1);
  std::vector<std::thread> ts;
  ts.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back(worker, g_rank, size, t, threads, messages, large_mb);
  }
  for (auto &t : ts) t.join();
  return g_failures.load() == 0 ? 0 : 1;
} catch (const std::exception &e) {  // rocl_init failed, or no thread could start
  std::fprintf(stderr, "all_pairs rank %d: %s\n", g_rank, e.what());
  return 1;
}
