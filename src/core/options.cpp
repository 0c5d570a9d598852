// options.cpp - the core's option rows and the Options it reads from them.
// Each transport declares its own rows in its folder (TransportEntry::options);
// load_options gathers them all into Options::values.
#include "core/options.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <string_view>

#include "config/known_variables.hpp"
#include "core/stripe_wire.hpp"
#include "transport/transport.hpp"
#include "wait/wait_policy.hpp"

extern char **environ;

namespace rocl::impl {
namespace {

const OptionRow kCoreOptions[] = {
    {"ROCL_POOL_MAX", "4G",
     "Cap on the memory of the buffer pool (bytes; K/M/G suffixes). rocl_bfget fails with "
     "ROCL_ENOMEM beyond it.",
     OptionType::kSize},
    {"ROCL_POOL_THREAD_CACHE", "2M",
     "Bytes of free buffers of one size class (up to 64 KiB blocks, at most 256 blocks) "
     "each thread keeps for itself, so that bfget/bfret take no shared lock.",
     OptionType::kSize},
    {"ROCL_WAIT", "auto",
     "How a waiting thread spends its cpu. auto: spin while it pays (alone on its cpu: "
     "ROCL_SPIN_US with PAUSE; another rocl thread of the node runnable on its cpu: "
     "sched_yield between looks, ten times as long), then sleep until woken. spin: spin until "
     "done, never yield or sleep (dedicated cpus). block: sleep after 16 looks (cpus scarce, "
     "latency "
     "no matter). docs/architecture.md, \"Waiting\", tells the policy.",
     OptionType::kString},
    {"ROCL_SPIN_US", "100",
     "Microseconds a waiting thread alone on its cpu spins before it sleeps (ROCL_WAIT=auto). "
     "Waking a sleeping thread costs tens of microseconds; spinning costs a core.",
     OptionType::kUint},
    {"ROCL_RNDV_THRESHOLD", "64M",
     "Messages of at least this many bytes between processes go by rendezvous: the payload "
     "waits at the sender until a receive matches, then is copied once (shm: from the "
     "sender's pool, mapped read-only; tcp: read from the socket straight into the receive's "
     "block). shm and tcp start lower (ROCL_SHM_RNDV_THRESHOLD, 8K; ROCL_TCP_RNDV_THRESHOLD, "
     "1M, for messages from the application's memory), so at the default this bounds what a "
     "tcp pool buffer sends eagerly: one read straight into a block, without the request's "
     "round trip, arrives sooner up to tens of MiB (rocl-bench latency bandwidth --transport "
     "tcp with a lower value shows it). Larger messages wait for their receive (which then "
     "needs the memory). 0: never.",
     OptionType::kSize},
    {"ROCL_RNDV_COPY_THRESHOLD", "128K",
     "A message sent from plain memory (the library copies it into a pool block first) goes by "
     "rendezvous from this many bytes, where the transport lets a receive copy it straight "
     "into its own memory (shm, rocl_recvx and MPI receives): two copies instead of four "
     "(block, ring, block, receive). ROCL_RNDV_THRESHOLD=0 turns this off too (0: never).",
     OptionType::kSize},
    {"ROCL_STRIPE_THRESHOLD", "1M",
     "A message of at least this many bytes to a peer reached over several rails (networks "
     "of one kind that both ends have: ROCL_TCP_BIND=eth0,eth1 makes two tcp rails) is cut "
     "into fragments of ROCL_STRIPE_FRAGMENT bytes, spread over every rail as fast as each "
     "drains them and put back together at the receiver, in order with the pair's other "
     "messages. Shorter messages take the first rail. 0: never stripe.",
     OptionType::kSize},
    {"ROCL_STRIPE_FRAGMENT", "256K",
     "The bytes of a striped message each fragment carries (at least 4K). Smaller spreads a "
     "message more evenly over rails of different speeds; larger costs fewer messages. Keep it "
     "below the rails' own rendezvous thresholds (ROCL_TCP_RNDV_THRESHOLD, "
     "ROCL_UCX_RNDV_THRESHOLD), so that fragments go eagerly.",
     OptionType::kSize},
    {"ROCL_STRIPE_RESEND_MS", "10000",
     "A striped message's send returns once the receiver has it whole (its acknowledgement): a "
     "rail's connection that breaks after taking fragments loses them. Without the "
     "acknowledgement this many milliseconds after the last fragment left, the message is "
     "sent again over the rails that still work (at most three sends in all), then the send "
     "fails naming the peer. Keep it above a rail's failure bound (ROCL_TCP_USER_TIMEOUT_MS).",
     OptionType::kUint},
    {"ROCL_LEND_THRESHOLD", "32K",
     "rocl_isendx_lend (MPI's standard and ready sends of contiguous data) lends the "
     "application's memory from this many bytes where the transport can send from it (shm, "
     "from ROCL_SHM_LEND_THRESHOLD: the receive copies it once, straight from the sender's "
     "memory, with cross-memory attach, the waiting sender writing half of it meanwhile; a "
     "smaller lent message goes through the ring at once; tcp: written into the socket "
     "from there), and the send completes only then. Smaller ones, pool buffers and shm "
     "peers that cannot read our memory are copied at once as rocl_isendx does. "
     "ROCL_RNDV_THRESHOLD=0 turns this off too (0: never).",
     OptionType::kSize},
    {"ROCL_LINGER_MS", "10000",
     "The last rocl_exit waits at most this long for messages rocl_send already accepted but "
     "the transport still holds (tcp: bytes not yet written, rendezvous messages not yet "
     "pulled) to reach their receivers, as SO_LINGER does; what is left then is dropped with "
     "a sentence on stderr naming the peer (0: drop at once).",
     OptionType::kUint},
    {"ROCL_PEER_CHECK_MS", "500",
     "A receive waiting for one origin checks this often that the origin still exists, and "
     "fails with ROCL_EPEER naming it once its process has exited or died, or once this "
     "process has lost its directory server, which could tell (0: never); not while input is "
     "held unread for want of pool blocks (the origin's last messages may be in it).",
     OptionType::kUint},
    {"ROCL_TRANSPORTS", "auto",
     "Comma-separated transports to enable, in order of preference (built: see "
     "rocl-info). auto: inproc alone for a process on its own (no ROCL_DIRECTORY: no other "
     "process can find it), every built transport in a job.",
     OptionType::kString},
    {"ROCL_DIRECTORY", "",
     "Where the host's directory server listens: unix:PATH, or tcp:HOST:PORT for a server "
     "reached over the network (without the removal epoch: a route cached to a deleted "
     "resource is found stale when a send over it fails); roclrun sets it. Empty: a "
     "directory private to this process.",
     OptionType::kString},
    {"ROCL_SECRET_FILE", "",
     "The job secret (a 0600 file) proved to the directory and to peers; roclrun sets it.",
     OptionType::kString},
    {"ROCL_GID_BITS", "63",
     "How wide the gids are that the directory servers of the job (and a lone process's own "
     "directory) issue: 63 (a server id in bits 63..48) or 31 (bits 30..24, at most 127 "
     "servers and 16M gids each): gids that fit a C int, for programs written to the RoCL "
     "paper's types (rocl/rocl_paper.h). Every server of a job must be set alike: roclrun "
     "passes it on.",
     OptionType::kString},
    {"ROCL_HOST_NAME", "",
     "The name this process's host has in the directory (its context's \"host\" attribute, "
     "what rocl-dir list groups by). Empty: the system's host name. roclrun --hosts sets the "
     "name the host was given by.",
     OptionType::kString},
    {"ROCL_SPAWN_ID", "",
     "Set by the directory server that spawned this process (rocl_spawn): its context "
     "registers with the attribute spawn=<this>, which tells the server the spawn is done. "
     "Not for users.",
     OptionType::kString},
    {"ROCL_PARENT", "",
     "Set by the directory server that spawned this process: the spawner's context gid "
     "(decimal), the context's \"parent\" attribute and rocl_parent(). Not for users.",
     OptionType::kString},
};

}  // namespace

std::span<const OptionRow> core_option_rows() noexcept {
  return kCoreOptions;
}

OptionValues all_option_defaults() {
  OptionValues values(kCoreOptions);
  for (const TransportEntry *entry : transport_table()) values.add(entry->options);
  return values;
}

Options options_from(const OptionValues &values) {
  Options o;
  o.pool_max = values.size("ROCL_POOL_MAX");
  o.pool_thread_cache = values.size("ROCL_POOL_THREAD_CACHE");
  o.spin_us = values.uint("ROCL_SPIN_US");
  const std::string wait_text = values.text("ROCL_WAIT");
  if (auto mode = wait::parse_mode(wait_text)) {
    o.wait_mode = *mode;
  } else {
    std::fprintf(stderr, "rocl: ROCL_WAIT=%s is not auto, spin or block; using auto\n",
                 wait_text.c_str());
  }
  o.peer_check_ms = values.uint("ROCL_PEER_CHECK_MS");
  o.rndv_threshold = values.size("ROCL_RNDV_THRESHOLD");
  o.rndv_copy_threshold = values.size("ROCL_RNDV_COPY_THRESHOLD");
  o.lend_threshold = values.size("ROCL_LEND_THRESHOLD");
  o.linger_ms = values.uint("ROCL_LINGER_MS");
  o.stripe_threshold = values.size("ROCL_STRIPE_THRESHOLD");
  o.stripe_resend_ms = std::max<std::uint32_t>(values.uint("ROCL_STRIPE_RESEND_MS"), 1);
  o.stripe_fragment =
      std::max<std::size_t>(values.size("ROCL_STRIPE_FRAGMENT"), FragmentHeader::kMinFragmentBytes);
  o.transports = values.text("ROCL_TRANSPORTS");
  o.directory = values.text("ROCL_DIRECTORY");
  o.secret_file = values.text("ROCL_SECRET_FILE");
  o.host_name = values.text("ROCL_HOST_NAME");
  o.spawn_id = values.text("ROCL_SPAWN_ID");
  o.parent = std::strtoull(values.text("ROCL_PARENT").c_str(), nullptr, 10);
  if (!parse_gid_bits(values.text("ROCL_GID_BITS").c_str(), &o.gid_width)) {
    std::fprintf(stderr, "rocl: ROCL_GID_BITS='%s' is neither 63 nor 31; using 63\n",
                 values.text("ROCL_GID_BITS").c_str());
  }
  o.values = values;
  return o;
}

Options load_options() {
  OptionValues values = all_option_defaults();
  values.read_environment();
  return options_from(values);
}

void print_options(std::FILE *out) {
  OptionValues values = all_option_defaults();
  values.read_environment();
  values.print(out);
}

std::vector<std::string_view> known_variable_names() {
  std::vector<std::string_view> names;
  for (const OptionRow &row : kCoreOptions) names.emplace_back(row.name);
  for (const TransportEntry *entry : transport_table()) {
    for (const OptionRow &row : entry->options) names.emplace_back(row.name);
  }
  for (const VariableRow &row : non_option_variables()) names.emplace_back(row.name);
  return names;
}

std::vector<std::string> unknown_variable_warnings() {
  const std::vector<std::string_view> known = known_variable_names();
  std::vector<std::string> lines;
  for (const std::string &entry : unknown_variables(environ, known)) {
    lines.push_back(unknown_variable_warning(entry, known));
  }
  return lines;
}

void report_unknown_variables_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      for (const std::string &line : unknown_variable_warnings()) {
        std::fprintf(stderr, "%s\n", line.c_str());
      }
    } catch (const std::bad_alloc &) {
      // A warning is not worth failing rocl_init for.
    }
  });
}

}  // namespace rocl::impl
