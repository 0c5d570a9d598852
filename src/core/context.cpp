// context.cpp - context life cycle, resources and buffers. Messaging is in
// messaging.cpp, immediate operations in requests.cpp.
#include "core/context.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>
#include <system_error>

#include "bootstrap/job_bootstrap.hpp"
#include "directory/attr_list.hpp"
#include "directory/remote_directory.hpp"
#include "os/host.hpp"
#include "security/job_secret.hpp"
#include "status/status.hpp"
#include "wait/wait_policy.hpp"

namespace rocl::impl {

std::atomic<Context *> Context::current_{nullptr};

namespace {
std::mutex g_init_mutex;
int g_init_count = 0;
std::unique_ptr<Context> g_context;
// The job a launcher other than roclrun started this process in (PMIx):
// joined before the global context reads its options, ended after it.
std::unique_ptr<bootstrap::Job> g_job;

// The in-process directory stands in for the node directory server, which
// outlives the contexts that use it: one per process, so that a later
// context never reissues an earlier context's gids.
// The first context's ROCL_GID_BITS decides its width for the process.
Directory &process_directory(GidWidth width) {
  static std::unique_ptr<Directory> directory = make_local_directory(1, width);
  return *directory;
}

// The node server named by ROCL_DIRECTORY (proving the job secret), or the
// process's own directory when none is named.
Directory *open_directory(const Options &options, std::unique_ptr<Directory> &owned,
                          std::optional<JobSecret> &job_secret) {
  if (options.directory.empty()) return &process_directory(options.gid_width);
  if (options.directory.rfind("unix:", 0) != 0 && options.directory.rfind("tcp:", 0) != 0) {
    throw std::invalid_argument("ROCL_DIRECTORY='" + options.directory +
                                "' is not of the form unix:PATH or tcp:HOST:PORT");
  }
  if (options.secret_file.empty()) {
    throw std::invalid_argument(
        "ROCL_DIRECTORY is set but ROCL_SECRET_FILE is not: the "
        "directory needs the job secret");
  }
  JobSecret secret;
  if (JobSecret::read_file(options.secret_file, &secret) != ROCL_OK) {
    throw std::invalid_argument(last_error());
  }
  owned = connect_directory(options.directory, secret);
  job_secret = secret;
  if (!owned) throw std::invalid_argument(last_error());
  return owned.get();
}

std::uint64_t new_instance_id() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd() ^ static_cast<std::uint64_t>(::getpid());
}
}  // namespace

std::int64_t Context::acquire_global() {
  std::lock_guard lock(g_init_mutex);
  if (g_init_count == 0) {
    // Before anything can fail: a misspelt variable may be why it does.
    report_unknown_variables_once();
    try {
      if (!g_job) g_job = bootstrap::join_launchers_job();
      g_context = std::make_unique<Context>(load_options());
    } catch (const std::invalid_argument &e) {  // a configuration mistake
      return fail(ROCL_EINVAL, "rocl_init: %s", e.what());
    } catch (const std::system_error &e) {  // e.g. no address space for ROCL_POOL_MAX
      return fail(ROCL_ENOMEM, "rocl_init: %s (ROCL_POOL_MAX=%zu)", e.what(),
                  load_options().pool_max);
    } catch (const std::exception &e) {
      return fail(ROCL_EINTERNAL, "rocl_init: %s", e.what());
    }
    current_.store(g_context.get(), std::memory_order_release);
  }
  ++g_init_count;
  return static_cast<std::int64_t>(g_context->gid());
}

int Context::global_references() {
  std::lock_guard lock(g_init_mutex);
  return g_init_count;
}

int Context::release_global() {
  std::lock_guard lock(g_init_mutex);
  if (g_init_count == 0) return fail(ROCL_ENOINIT, "rocl_exit: rocl_init was not called");
  if (--g_init_count == 0) {
    current_.store(nullptr, std::memory_order_release);
    g_context.reset();
    g_job.reset();
  }
  return ROCL_OK;
}

Context::Context(const Options &options) : options_(options), progress_(*this, acks_) {
  wait::configure(options_.wait_mode, std::chrono::microseconds(options_.spin_us));
  PoolConfig pool_config;
  pool_config.cap_bytes = options_.pool_max;
  pool_config.thread_cache_bytes = options_.pool_thread_cache;
  pool_ = std::make_unique<BufferPool>(pool_config);
  stripes_ = std::make_unique<StripeReassembly>(
      *pool_,
      [this](rocl_gid_t destination, Message *msg) {
        return deliver_now(destination, msg, nullptr);
      },
      [](const std::string &line) { std::fprintf(stderr, "rocl: %s\n", line.c_str()); },
      [this](rocl_gid_t source, std::uint64_t id) {
        // Sent after the progress round (acks.cpp); from our context's
        // gid, which the sender only needs as an origin.
        if (!acks_.push(AckQueue::Ack{gid_, source, 0, 0, id})) {
          std::fprintf(stderr, "rocl: no memory to acknowledge a striped message\n");
        }
      });
  directory_ = open_directory(options_, owned_directory_, secret_);
  start_transports();

  // The context as ToCL's entities see it: its host (name and id), its
  // process, and where each of its transports listens.
  AttrList attrs(static_cast<int>(4096 + transports_.size() * kMaxAddressBytes));
  auto add = [&attrs](const std::string &name, std::string_view value) {
    if (attrs.add(name.c_str(), value.data(), static_cast<int>(value.size())) != ROCL_OK) {
      throw std::runtime_error(last_error());
    }
  };
  add("type", "context");
  add("host", options_.host_name.empty() ? os::host_name() : options_.host_name);
  add("host.id", os::host_id());
  add("pid", std::to_string(::getpid()));
  if (!options_.spawn_id.empty()) add("spawn", options_.spawn_id);
  if (options_.parent != ROCL_NULL_GID) {
    if (attrs.add("parent", &options_.parent, sizeof options_.parent) != ROCL_OK) {
      throw std::runtime_error(last_error());
    }
  }
  for (auto &t : transports_) add("addr." + std::string(t->name()), t->address());
  std::int64_t gid = directory_->register_resource(attrs, ROCL_NULL_GID);
  if (gid < 0) throw std::runtime_error(last_error());
  gid_ = static_cast<rocl_gid_t>(gid);
  fragment_gid_.store(gid_, std::memory_order_relaxed);
  router_.set_context(gid_);
}

void Context::start_transports() {
  TransportEnv env{this, new_instance_id(), pool_.get(), secret_ ? &*secret_ : nullptr};
  env.rendezvous_threshold = options_.rndv_threshold;
  env.options = &options_.values;
  env.linger_ms = options_.linger_ms;
  env.spin_us = static_cast<std::uint32_t>(
      std::min<std::int64_t>(wait::spin_budget().count(), options_.spin_us));
  std::vector<Transport *> polled;
  std::vector<Reach> reach;  // polled[k]'s
  std::string list = options_.transports;
  if (list == "auto") {
    // Without a node directory no other process can find this context, so
    // end-points that reach beyond it (a thread and a socket or segment
    // each) would only cost start-up time.
    // One in-process hand-off (the first built) serves the process.
    list.clear();
    bool local = false;
    for (const TransportEntry *entry : transport_table()) {
      if (!entry->in_auto) continue;
      const bool in_process = entry->reach == Reach::kProcess;
      if ((in_process && !local) || (!in_process && !options_.directory.empty())) {
        list += std::string(list.empty() ? "" : ",") + entry->name;
        local = local || in_process;
      }
    }
  }
  for (const std::string &name : split_list(list)) {
    const TransportEntry *entry = find_transport(name);
    if (entry == nullptr) {
      throw std::invalid_argument("ROCL_TRANSPORTS names '" + name +
                                  "', which this build of rocl does not have (see rocl-info)");
    }
    // A list in the transport's network option (ROCL_TCP_BIND=eth0,eth1):
    // one end-point per entry, each a rail, made with its entry alone.
    std::vector<std::string> networks;
    if (entry->rail_option != nullptr)
      networks = split_list(options_.values.text(entry->rail_option));
    const std::size_t rails = std::max<std::size_t>(networks.size(), 1);
    for (std::size_t k = 0; k < rails; ++k) {
      TransportEnv rail_env = env;
      if (networks.size() > 1) {
        rail_options_.push_back(std::make_unique<OptionValues>(options_.values));
        rail_options_.back()->set(entry->rail_option, networks[k]);
        rail_env.options = rail_options_.back().get();
        rail_env.rail = static_cast<unsigned>(k);
      }
      std::unique_ptr<Transport> made = entry->make(rail_env);
      if (!made) throw std::runtime_error("transport " + name + ": " + last_error());
      transports_.push_back(std::move(made));
      Transport *t = transports_.back().get();
      if (t->register_memory(pool_->region_base(), pool_->region_bytes()) != ROCL_OK) {
        throw std::runtime_error("transport " + std::string(t->name()) +
                                 " cannot register the buffer pool");
      }
      if (entry->reach == Reach::kProcess) {
        if (local_ != nullptr) {
          throw std::invalid_argument("ROCL_TRANSPORTS names two in-process transports ('" +
                                      std::string(local_->name()) + "', '" + name + "')");
        }
        local_ = t;
      } else {
        polled.push_back(t);
        reach.push_back(entry->reach);
      }
    }
  }
  if (transports_.empty()) throw std::invalid_argument("ROCL_TRANSPORTS names no transport");
  router_.start(pool_.get(), directory_, local_, polled, std::move(reach));
  progress_.set_transports(std::move(polled));
}

Context::~Context() {
  // Bytes already on their way go out while our resources still exist
  // (transport.hpp: flush), so that a receiver waiting for one of them does
  // not see its origin leave the directory meanwhile and give up.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.linger_ms);
  for (auto &t : transports_) t->flush(deadline);
  for (rocl_gid_t gid : resources_.gids()) delete_resource(gid);
  // Receivers woken by the deletions are on their way out of rocl_recv;
  // they still touch this context, so it must outlive them.
  if (!resources_.wait_for_callers(std::chrono::seconds(10))) {
    std::fprintf(stderr,
                 "rocl_exit: threads are still inside rocl calls after 10 s; "
                 "tearing down anyway\n");
  }
  directory_->remove_context(gid_);  // and the context's own entry
  // Each transport first delivers what its send() accepted, for up to
  // ROCL_LINGER_MS (TransportEnv::linger_ms): rocl_send returned ROCL_OK for
  // those messages, so exiting right after it must not lose them. Our
  // resources are gone by now: the stubs of peers' messages that waited in
  // their mailboxes were discarded (those senders were told to let go), so
  // no peer lingers on a pull of ours while we linger on theirs.
  transports_.clear();
}

// ---- resources -----------------------------------------------------------

std::int64_t Context::register_resource(const AttrList &attrs) {
  std::unique_lock lock(registering_);
  std::int64_t gid = directory_->register_resource(attrs, gid_);
  if (gid < 0) return gid;
  resources_.insert(static_cast<rocl_gid_t>(gid));
  return gid;
}

int Context::delete_resource(rocl_gid_t gid) {
  // Acknowledgements of messages it matched in a transport's progress
  // (acks.cpp) go out first, while it is still the resource they come
  // from: their synchronous senders wait for them.
  if (acks_.waiting()) send_acks();
  Resource *r = resources_.remove(gid);
  if (r == nullptr) {
    return fail(ROCL_EBADGID, "rocl_delete: gid %#llx is not a resource of this context",
                static_cast<unsigned long long>(gid));
  }
  directory_->remove(gid);
  r->mailbox().close(ROCL_EDELETED, [this](Envelope *e) { free_message(e); });
  resources_.put(r);
  router_.bind(gid, {});  // its route, if it had one
  return ROCL_OK;
}

int Context::bind_route(rocl_gid_t gid, const char *network) noexcept {
  if (!resources_.contains(gid)) {
    return fail(ROCL_EBADGID, "rocl_route: gid %#llx is not a resource of this context",
                static_cast<unsigned long long>(gid));
  }
  const int rc =
      router_.bind(gid, network != nullptr ? std::string_view(network) : std::string_view());
  if (rc == ROCL_OK) return rc;
  const std::string why = last_error();  // fail() writes where last_error() reads
  return fail(rc, "rocl_route: %s", why.c_str());
}

int Context::bind_route(void *buffer, const char *network) noexcept {
  BlockHeader *b = buffer != nullptr ? pool_->find(buffer) : nullptr;
  if (b == nullptr || b->state.load(std::memory_order_acquire) != BlockState::kUser) {
    return fail(ROCL_EBADBUF, "rocl_bfnet: %p is not the start of a rocl buffer of the caller",
                buffer);
  }
  std::uint8_t index = 0;
  if (int rc = router_.network_of(network != nullptr ? network : "", &index); rc != ROCL_OK) {
    const std::string why = last_error();  // fail() writes where last_error() reads
    return fail(rc, "rocl_bfnet: %s", why.c_str());
  }
  b->network = index;
  return ROCL_OK;
}

void Context::free_message(Envelope *msg) noexcept {
  if (msg->rendezvous) {
    rendezvous_transport(msg)->discard(static_cast<Message *>(msg));
    return;
  }
  BlockHeader *b = block_of(msg);
  std::destroy_at(static_cast<Message *>(msg));
  pool_->release(b, BlockState::kLibrary);
}

}  // namespace rocl::impl
