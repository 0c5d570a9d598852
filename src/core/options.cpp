// options.cpp - the option table. Adding an option is one row here.
#include "core/options.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace rocl::impl {
namespace {

enum class Type { kSize, kUint, kString };

struct OptionRow {
  const char *name;
  const char *default_value;
  const char *doc;
  Type type;
  void *(*field)(Options &);
};

template <auto Member>
void *field_of(Options &o) {
  return &(o.*Member);
}

const OptionRow kOptions[] = {
    {"ROCL_POOL_MAX", "4G",
     "Cap on the memory of the buffer pool (bytes; K/M/G suffixes). rocl_bfget fails with "
     "ROCL_ENOMEM beyond it.",
     Type::kSize, field_of<&Options::pool_max>},
    {"ROCL_POOL_THREAD_CACHE", "2M",
     "Bytes of free buffers of one size class (up to 64 KiB blocks, at most 256 blocks) "
     "each thread keeps for itself, so that bfget/bfret take no shared lock.",
     Type::kSize, field_of<&Options::pool_thread_cache>},
    {"ROCL_SPIN_US", "100",
     "Microseconds a waiting receiver spins before it sleeps. Waking a sleeping thread "
     "costs tens of microseconds; spinning costs a core. While more threads of a process spin "
     "than it has cpus, a spinner yields its cpu now and then and spins ten times as long.",
     Type::kUint, field_of<&Options::spin_us>},
    {"ROCL_CPU_SHARERS", "1",
     "How many processes of the job run on this process's cpus, itself included; roclrun "
     "--bind-to core sets it to the ranks bound to the same cpu (unbound: 1). A spinning "
     "receiver yields its cpu now and then when spinning threads x this exceed its cpus.",
     Type::kUint, field_of<&Options::cpu_sharers>},
    {"ROCL_RNDV_THRESHOLD", "64M",
     "Messages of at least this many bytes between processes go by rendezvous: the payload "
     "waits at the sender until a receive matches, then is copied once (shm: from the "
     "sender's pool, mapped read-only; tcp: read from the socket straight into the receive's "
     "block). shm and tcp start lower (ROCL_SHM_RNDV_THRESHOLD, 8K; ROCL_TCP_RNDV_THRESHOLD, "
     "1M, for messages from the application's memory), so at the default this bounds what a "
     "tcp pool buffer sends eagerly: measured over loopback (2026-11-27), pool buffers eager "
     "vs rendezvous one-way 4 MiB 850-1160 vs 2120-2670 us, 16 MiB 4090-5490 vs 6890-7350, "
     "64 MiB 10900-14000 vs 17800-18100; streams 4 MiB 5.3-6.5 vs 4.5-4.9 GB/s, 16 MiB "
     "5.3-5.9 vs 2.9. Larger messages wait for their receive (which then needs the memory). "
     "0: never.",
     Type::kSize, field_of<&Options::rndv_threshold>},
    {"ROCL_RNDV_COPY_THRESHOLD", "128K",
     "A message sent from plain memory (the library copies it into a pool block first) goes by "
     "rendezvous from this many bytes, where the transport lets a receive copy it straight "
     "into its own memory (shm, rocl_recvx and MPI receives): two copies instead of four "
     "(block, ring, block, receive). ROCL_RNDV_THRESHOLD=0 turns this off too (0: never).",
     Type::kSize, field_of<&Options::rndv_copy_threshold>},
    {"ROCL_TCP_RNDV_THRESHOLD", "1M",
     "Over tcp, messages from the application's memory (rocl_isendx_lend, as MPI sends; or "
     "copied from it, ROCL_RNDV_COPY_THRESHOLD) of at least this many bytes (or "
     "ROCL_RNDV_THRESHOLD, if lower) go by rendezvous: the receiver asks for the payload when "
     "a receive matches and reads it from the socket straight into the receive's memory. Pool "
     "buffers, most likely received as buffers, go eagerly up to ROCL_RNDV_THRESHOLD. Measured "
     "at 1 MiB under cubic (ROCL_TCP_CONGESTION), rendezvous vs eager: MPI one-way 147-153 vs "
     "195-243 us; pool buffers 134-152 vs 115-124, streams 5.6-5.9 vs 7.9-9.5 GB/s. "
     "ROCL_RNDV_THRESHOLD=0 turns it off too (0: ROCL_RNDV_THRESHOLD alone).",
     Type::kSize, field_of<&Options::tcp_rndv_threshold>},
    {"ROCL_TCP_CONGESTION", "cubic,reno",
     "TCP congestion control of rocl's connections, the first of this comma-separated list "
     "the kernel accepts (the TCP_CONGESTION socket option; empty: the system's, "
     "net.ipv4.tcp_congestion_control). BBR, the default of some systems, paces a connection "
     "at its estimate of the path's bandwidth, which the bursts of a ping-pong never let it "
     "measure; measured over loopback, one-way 1 MiB 219-245 us under bbr, 140-155 under "
     "cubic (4 MiB 912-945 vs 592-599). An unprivileged process may set only what "
     "net.ipv4.tcp_allowed_congestion_control lists (reno always); if every name is refused, "
     "connections keep the system's, said once on stderr.",
     Type::kString, field_of<&Options::tcp_congestion>},
    {"ROCL_SHM_RNDV_THRESHOLD", "8K",
     "Over shm, pool buffers of at least this many bytes (or ROCL_RNDV_THRESHOLD, if lower) "
     "go by rendezvous: the receiver copies the payload from the sender's pool, mapped "
     "read-only, when a receive matches, while the sender, waiting for a reply or its next "
     "send, writes the other half into the receive's block through its mapping of the "
     "receiver's pool (both cpus copy, each the half its cache holds when a message is sent "
     "back). Measured against the rings: one-way 16 KiB 2.6 -> 1.1-1.4 us, 64 KiB 1.8 us; "
     "streams 32 KiB 13 -> 25-34 GB/s, 256 KiB 22 -> 38-40. ROCL_RNDV_THRESHOLD=0 turns it off "
     "too (0: ROCL_RNDV_THRESHOLD alone).",
     Type::kSize, field_of<&Options::shm_rndv_threshold>},
    {"ROCL_SHM_STREAM_RNDV_THRESHOLD", "4K",
     "Over shm, pool buffers of at least this many bytes, below ROCL_SHM_RNDV_THRESHOLD, go by "
     "rendezvous too when they stream: when nothing arrived over shm since this sender's last "
     "such message to the same process (no reply came in between). A ping-pong's message is "
     "copied through the ring, which answers sooner; a stream's by rendezvous, where both "
     "cpus copy (streams of 4 KiB pool buffers: 1.2 -> 2.2 M msg/s on the AMD EPYC VM of "
     "2026-11-28). 0: never.",
     Type::kSize, field_of<&Options::shm_stream_rndv_threshold>},
    {"ROCL_LEND_THRESHOLD", "32K",
     "rocl_isendx_lend (MPI's standard and ready sends of contiguous data) lends the "
     "application's memory from this many bytes where the transport can send from it (shm, "
     "from ROCL_SHM_LEND_THRESHOLD: the receive copies it once, straight from the sender's "
     "memory, with cross-memory attach, the waiting sender writing half of it meanwhile; a "
     "smaller lent message goes through the ring at once; tcp: written into the socket "
     "from there), and the send completes only then. Smaller ones, pool buffers and shm "
     "peers that cannot read our memory are copied at once as rocl_isendx does. "
     "ROCL_RNDV_THRESHOLD=0 turns this off too (0: never).",
     Type::kSize, field_of<&Options::lend_threshold>},
    {"ROCL_SHM_LEND_THRESHOLD", "128K",
     "Over shm, what a send lends (ROCL_LEND_THRESHOLD) is read by the receiver from the "
     "sender's memory only from this many bytes; a smaller lent message is copied through "
     "the ring at once (memcpy in, memcpy out), and its send completes then. The kernel's "
     "cross-memory copy costs a system call and page pinning per call, and on the AMD EPYC VM "
     "of 2026-11-27 it copied 64 KiB at 7.7 GB/s at best against memcpy's 38: rocl's MPI "
     "one-way 32/64/96 KiB took 8.8-11/14-19/20-27 us read from the sender's memory against "
     "3.1/5.9-6.1/8.1-25 through the ring, while from 128 KiB reading was ahead (128 KiB "
     "12.5-14 us vs 17-37, 256 KiB 20-22 vs 27-28). 0: ROCL_LEND_THRESHOLD alone.",
     Type::kSize, field_of<&Options::shm_lend_threshold>},
    {"ROCL_LINGER_MS", "10000",
     "The last rocl_exit waits at most this long for messages rocl_send already accepted but "
     "the transport still holds (tcp: bytes not yet written, rendezvous messages not yet "
     "pulled) to reach their receivers, as SO_LINGER does; what is left then is dropped with "
     "a sentence on stderr naming the peer (0: drop at once).",
     Type::kUint, field_of<&Options::linger_ms>},
    {"ROCL_PEER_CHECK_MS", "500",
     "A receive waiting for one origin checks this often that the origin still exists, and "
     "fails with ROCL_EPEER naming it once its process has exited or died (0: never); not "
     "while input is held unread for want of pool blocks (the origin's last messages may be "
     "in it).",
     Type::kUint, field_of<&Options::peer_check_ms>},
    {"ROCL_TRANSPORTS", "auto",
     "Comma-separated transports to enable, in order of preference (built: see "
     "rocl-info). auto: inproc alone for a process on its own (no ROCL_DIRECTORY: no other "
     "process can find it), every built transport in a job.",
     Type::kString, field_of<&Options::transports>},
    {"ROCL_DIRECTORY", "",
     "Where the node directory server listens (unix:PATH); roclrun sets it. Empty: a "
     "directory private to this process.",
     Type::kString, field_of<&Options::directory>},
    {"ROCL_SECRET_FILE", "",
     "The job secret (a 0600 file) proved to the directory and to peers; roclrun sets it.",
     Type::kString, field_of<&Options::secret_file>},
};

bool parse_uint(const char *text, std::uint32_t *out) {
  char *end = nullptr;
  errno = 0;
  unsigned long v = std::strtoul(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v > 0xffffffffUL) return false;
  *out = static_cast<std::uint32_t>(v);
  return true;
}

bool apply(const OptionRow &row, const char *text, Options &o) {
  void *field = row.field(o);
  switch (row.type) {
    case Type::kSize:
      return parse_size(text, static_cast<std::size_t *>(field));
    case Type::kUint:
      return parse_uint(text, static_cast<std::uint32_t *>(field));
    case Type::kString:
      *static_cast<std::string *>(field) = text;
      return true;
  }
  return false;
}

Options defaults() {
  Options o{};
  for (const auto &row : kOptions) apply(row, row.default_value, o);
  return o;
}

}  // namespace

bool parse_size(const char *text, std::size_t *out) {
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || text[0] == '-') return false;
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  if (*end == 'M' || *end == 'm') shift = 20;
  if (*end == 'G' || *end == 'g') shift = 30;
  if (shift != 0) ++end;
  if (*end != '\0') return false;
  if (shift != 0 && v > (~0ull >> shift)) return false;
  *out = static_cast<std::size_t>(v << shift);
  return true;
}

std::vector<std::string> split_list(std::string_view list) {
  std::vector<std::string> names;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    if (!name.empty()) names.emplace_back(name);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return names;
}

Options load_options() {
  Options o = defaults();
  for (const auto &row : kOptions) {
    const char *text = std::getenv(row.name);
    if (text == nullptr || *text == '\0') continue;  // set but empty: the default, as unset
    if (!apply(row, text, o)) {
      std::fprintf(stderr, "rocl: ignoring %s='%s': not a valid value; using %s\n", row.name, text,
                   row.default_value);
      apply(row, row.default_value, o);
    }
  }
  return o;
}

void print_options(std::FILE *out) {
  for (const auto &row : kOptions) {
    const char *set = std::getenv(row.name);
    if (set != nullptr && *set == '\0') set = nullptr;
    std::fprintf(out, "%s=%s%s\n    %s\n", row.name, set != nullptr ? set : row.default_value,
                 set != nullptr ? "  (from environment)" : "  (default)", row.doc);
  }
}

}  // namespace rocl::impl
