// soak.hpp - what the parts of the soak program share: soak.cpp (the
// process: options, resources, the report), soak_worker.cpp (one thread's
// traffic), soak_payload.cpp (what a message holds, from its sender, its
// receiver and its sequence number) and soak_process.cpp (resident memory
// sampled every second, and the process's file descriptors and threads).
#pragma once

#include <rocl/rocl.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace soak {

// ---- options (soak.cpp) ----------------------------------------------------

struct Config {
  long long messages = 400000;        // data messages of the whole job
  std::size_t max_size = 1u << 20;    // the largest message (the full soak's: 8 MiB)
  int threads = 8;                    // threads (resources) per process
  std::uint64_t seed = 1;             // sizes, modes and destinations follow from it
  int window = 8;                     // unacknowledged messages per pair
  long stall_ms = 120000;             // nothing received for this long: a hang
  double rss_ratio = 0.10;            // RSS may end this much above the reference
  std::size_t rss_slack = 16u << 20;  // ... and this many bytes more
};

// The job's resources: global index (rank * threads + thread) to gid and
// back.
struct Peers {
  std::vector<rocl_gid_t> gid;
  std::unordered_map<rocl_gid_t, int> index;
  int count() const { return static_cast<int>(gid.size()); }
};

// What the process's threads did, summed.
struct Totals {
  std::atomic<long long> sent{0}, sent_bytes{0}, received{0}, received_bytes{0};
  std::atomic<long long> controls{0};  // acknowledgements, ends and byes received
  std::atomic<int> failures{0};
};

// A failure the run survives (a lost, duplicated or damaged message): says
// it on stderr (the first 20 of the process) and counts it.
void report(Totals &totals, const std::string &what);
// A failure it cannot go on from (a hang, a call that must not fail):
// says it and ends the process at once (other threads are inside rocl).
[[noreturn]] void die(const std::string &what);

// ---- messages (soak_payload.cpp) -------------------------------------------

// How a data message is sent (the message's flags carry it, so that the
// receiver checks they travel).
enum class Mode : unsigned {
  kHandover = 1,  // a pool buffer given with rocl_bftoret: no copy
  kKept = 2,      // a pool buffer the sender keeps until rocl_bfstat says SENT
  kCopied = 3,    // the sender's own memory, copied by rocl_sendx
  kLent = 4,      // the sender's own memory, lent (rocl_isendx_lend)
};

struct Plan {
  std::size_t len;
  Mode mode;
};

// The length and mode of message `seq` from global index `from` to `to`: a
// function of the seed, so that the receiver knows them too. 90 % are
// 1 B..1 KiB, 9 % up to 64 KiB, 1 % up to max_size (uniform within each
// band; bands above max_size fold into the one below).
Plan plan_of(const Config &config, int from, int to, std::uint64_t seq);

// Fills p[0..len) with message seq's bytes: a stream of words made from
// (seed, from, to, seq); from 16 bytes on, bytes 0..7 hold a 64-bit hash
// of bytes 8..len and bytes 8..15 the sequence number.
void fill_payload(std::uint64_t seed, int from, int to, std::uint64_t seq, unsigned char *p,
                  std::size_t len);
// "" if p[0..len) is that message, else what is wrong with it.
std::string check_payload(std::uint64_t seed, int from, int to, std::uint64_t seq,
                          const unsigned char *p, std::size_t len);

// A 64-bit mix (splitmix64's finaliser), also the workers' random numbers.
std::uint64_t mix(std::uint64_t x);

// ---- the process (soak_process.cpp) ----------------------------------------

// The process's open file descriptors (number -> what it is) and threads.
struct Census {
  std::map<int, std::string> fds;
  std::vector<std::string> threads;  // their names (/proc/self/task/*/comm)
};
Census take_census();

// The ways this process reaches the others' memory and sockets: the pools
// of other processes it maps (shm: the processes of its host) and its
// established tcp connections (/proc/self/net/tcp, by socket inode).
struct Links {
  int shm_pools = 0;
  int tcp = 0;
};
Links take_links();
// "" if after holds what before did, else what was left behind.
std::string compare_census(const Census &before, const Census &after);

// VmRSS in KiB (/proc/self/status).
long rss_kib();

// What the monitor samples, in KiB.
struct Memory {
  long rss = 0;       // VmRSS
  long pools = 0;     // of which pages of rocl's buffer pools (memfd:rocl-pool
                      // mappings: ours, and those of the host's other
                      // processes, mapped for shm)
  long reserved = 0;  // our pool's reserved bytes (rocl_pool_stats)
  long in_use = 0;    // ... and those in use
  long outside() const { return rss - pools; }
};

// Samples memory every second in a thread of its own and prints each
// sample; judges afterwards whether it stayed flat during the traffic.
//
// What is judged: resident memory outside the pools (the heap, stacks,
// code, shm rings) and our pool's reserved bytes, each by the rule of
// Config::rss_ratio and rss_slack: the highest sample of the last 20 % of
// the traffic against the highest from 20 % to 80 %. The pools' resident
// pages are not judged themselves: rocl keeps free large blocks for reuse
// (up to 160 blocks or 320 MiB per size class, src/buffer/buffer_pool.hpp),
// whose pages stay resident and fill up as larger messages land in them,
// and the pages of another process's pool that shm rendezvous read stay
// resident here while that process keeps the block; both climb slowly
// towards the traffic's high-water mark, bounded by the pools' reserved
// bytes, the one here and the peers'.
class RssMonitor {
 public:
  explicit RssMonitor(int rank) : rank_(rank) {}
  RssMonitor(const RssMonitor &) = delete;
  RssMonitor &operator=(const RssMonitor &) = delete;
  ~RssMonitor() { stop(); }

  void start();
  void stop();
  // The traffic's start and end, in the monitor's seconds.
  void traffic_started();
  void traffic_ended();

  struct Trend {
    long reference_kib = 0;  // the highest sample from 20 % to 80 % of the traffic
    long last_kib = 0;       // the highest from 80 % to its end
    bool flat = true;
  };
  struct Verdict {
    bool judged = false;  // false: traffic under 10 s, too few samples
    Trend outside, reserved;
    long peak_rss_kib = 0;
    int samples = 0;
    bool flat() const { return !judged || (outside.flat && reserved.flat); }
  };
  Verdict judge(const Config &config) const;

 private:
  void run();
  double now() const;

  struct Sample {
    double t;
    Memory m;
  };
  const int rank_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Sample> samples_;
  double started_ = 0, traffic_start_ = -1, traffic_end_ = -1;
  bool stop_ = false;
  std::atomic<bool> running_{false};
};

// ---- one thread's traffic (soak_worker.cpp) --------------------------------

// A thread's own memory: what it copies its sends from and receives into
// (every other receive), config.max_size each. Made and touched before the
// traffic and freed after its last sample, so that it is resident
// throughout and does not count as growth or shrinkage.
struct ThreadMemory {
  explicit ThreadMemory(std::size_t size) : scratch(size), inbox(size) {}
  std::vector<unsigned char> scratch, inbox;
};

// Runs the traffic of resource `self` (global index) to the end: its data
// messages, its ends, its byes; reports failures into totals.
void run_worker(const Config &config, const Peers &peers, int self, Totals &totals,
                ThreadMemory &memory);

}  // namespace soak
