// domain_api.cpp - CoR domains in the C API (rocl.h, "CoR domains"):
// argument checks and sentences here; the entries, claims and views in
// src/domain.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "buffer/block.hpp"
#include "core/context.hpp"
#include "domain/domain_state.hpp"
#include "status/status.hpp"

using rocl::impl::Context;
using rocl::impl::DomainState;
using rocl::impl::fail;
using rocl::impl::MemberRecord;

namespace {

constexpr std::size_t kMaxName = 200;

unsigned long long ull(rocl_gid_t g) {
  return static_cast<unsigned long long>(g);
}

Context *context_for(const char *who) {
  rocl::impl::clear_error();
  Context *ctx = Context::current();
  if (ctx == nullptr) fail(ROCL_ENOINIT, "%s: rocl_init has not been called", who);
  return ctx;
}

// A name argument: NULL or "" is none (when allowed); at most kMaxName bytes.
int check_name(const char *who, const char *what, const char *name, bool required) {
  if (name == nullptr || *name == '\0') {
    return required ? fail(ROCL_EINVAL, "%s: %s is NULL or empty", who, what) : ROCL_OK;
  }
  if (std::strlen(name) > kMaxName) {
    return fail(ROCL_EINVAL, "%s: %s '%.40s...' is longer than %zu bytes", who, what, name,
                kMaxName);
  }
  return ROCL_OK;
}

std::string_view name_of(const char *name) {
  return name != nullptr ? std::string_view(name) : std::string_view();
}

// The user's rocl buffer at ptr, if ptr is the start of one the caller owns.
rocl::impl::BlockHeader *user_block(Context &ctx, void *ptr) {
  rocl::impl::BlockHeader *b = ptr != nullptr ? ctx.pool().find(ptr) : nullptr;
  if (b == nullptr || b->state.load(std::memory_order_acquire) != rocl::impl::BlockState::kUser)
    return nullptr;
  return b;
}

// Sends a copy of (ptr, len) from a buffer of ours marked with the port's
// network (rocl_bfnet's mark), handed over to the library by the send.
int send_copy(Context &ctx, const std::string &port, rocl_gid_t from, rocl_gid_t to, int tag,
              std::uint32_t word, const void *ptr, std::size_t len) {
  void *copy = ctx.buffers().get(len);
  if (copy == nullptr) return ROCL_ENOMEM;
  if (len != 0) std::memcpy(copy, ptr, len);
  int rc = port.empty() ? ROCL_OK : ctx.bind_route(copy, port.c_str());
  if (rc == ROCL_OK) rc = ctx.buffers().return_after_send(copy);
  if (rc == ROCL_OK) rc = ctx.send(from, to, tag, word, copy, len);
  if (rc != ROCL_OK) ctx.buffers().give_back(copy);
  return rc;
}

// One message in the domain's context, over its soft-port if it has one:
// a buffer the caller hands over (bftoret) goes as it is, marked with the
// port's network unless it has one of its own; other memory is copied into
// a marked buffer (a buffer the caller keeps is not marked behind its back).
int send_in(Context &ctx, const std::string &port, rocl_gid_t from, rocl_gid_t to, int tag,
            std::uint32_t context, void *ptr, std::size_t len) {
  const std::uint32_t word = rocl::impl::domain_word(context, 0);
  if (port.empty()) return ctx.send(from, to, tag, word, ptr, len);
  rocl::impl::BlockHeader *b = user_block(ctx, ptr);
  if (b != nullptr && b->return_after_send) {
    if (b->network == 0) {
      if (int rc = ctx.bind_route(ptr, port.c_str()); rc != ROCL_OK) return rc;
    }
    return ctx.send(from, to, tag, word, ptr, len);
  }
  return send_copy(ctx, port, from, to, tag, word, ptr, len);
}

// Checks that network is one of this context's (rocl_route's list in the
// sentence otherwise), with a buffer that goes straight back.
int check_network(Context &ctx, const char *who, const char *network) {
  void *probe = ctx.buffers().get(0);
  if (probe == nullptr) return ROCL_ENOMEM;
  const int rc = ctx.bind_route(probe, network);
  std::string why = rc != ROCL_OK ? std::string(rocl::impl::last_error()) : std::string();
  ctx.buffers().give_back(probe);
  if (rc == ROCL_OK) return ROCL_OK;
  constexpr std::string_view kTheirs = "rocl_bfnet: ";
  if (why.starts_with(kTheirs)) why.erase(0, kTheirs.size());
  return fail(rc, "%s: %s", who, why.c_str());
}

}  // namespace

extern "C" {

int rocl_domain_create(rocl_gid_t parent, const char *name, rocl_gid_t *domain) {
  constexpr const char *who = "rocl_domain_create";
  Context *ctx = context_for(who);
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (domain == nullptr) return fail(ROCL_EINVAL, "%s: domain (where to put the gid) is NULL", who);
  if (int rc = check_name(who, "name", name, false); rc != ROCL_OK) return rc;
  DomainState &state = rocl::impl::domain_state(*ctx);
  if (parent != ROCL_NULL_GID) {
    rocl::impl::DomainRecord up;
    if (int rc = state.views.entries().read(who, parent, &up); rc != ROCL_OK) return rc;
  }
  return state.views.entries().create(who, parent, name_of(name), domain);
}

int rocl_domain_find(const char *name, rocl_gid_t parent, int timeout_ms, rocl_gid_t *domain) {
  constexpr const char *who = "rocl_domain_find";
  Context *ctx = context_for(who);
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (domain == nullptr) return fail(ROCL_EINVAL, "%s: domain (where to put the gid) is NULL", who);
  if (int rc = check_name(who, "name", name, true); rc != ROCL_OK) return rc;
  DomainState &state = rocl::impl::domain_state(*ctx);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto pause = std::chrono::microseconds(100);
  for (;;) {
    rocl::impl::DomainRecord found;
    const int rc = state.views.entries().find(who, name, parent, &found);
    if (rc == ROCL_OK) *domain = found.gid;
    if (rc != ROCL_ENOTFOUND || timeout_ms == 0) return rc;
    if (timeout_ms > 0 && std::chrono::steady_clock::now() >= give_up) {
      return fail(ROCL_ENOTFOUND, "%s: no domain named '%s' under parent %#llx within %d ms", who,
                  name, ull(parent), timeout_ms);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
}

int rocl_domain_delete(rocl_gid_t domain) {
  constexpr const char *who = "rocl_domain_delete";
  Context *ctx = context_for(who);
  if (ctx == nullptr) return ROCL_ENOINIT;
  DomainState &state = rocl::impl::domain_state(*ctx);
  rocl::impl::DomainRecord record;
  if (int rc = state.views.entries().read(who, domain, &record); rc != ROCL_OK) return rc;
  if (record.owner != ctx->gid()) {
    return fail(ROCL_EBADGID, "%s: domain %#llx was created by context %#llx, not by this one", who,
                ull(domain), ull(record.owner));
  }
  rocl_gid_t child = ROCL_NULL_GID;
  const int rc = state.views.entries().any_child(who, domain, &child);
  if (rc == ROCL_OK) {
    return fail(ROCL_EBUSY, "%s: domain %#llx has a subdomain (%#llx): delete that first", who,
                ull(domain), ull(child));
  }
  if (rc != ROCL_ENOTFOUND) return rc;
  rocl::impl::clear_error();
  for (const MemberRecord &m : state.local.take_all(domain)) {
    state.views.entries().remove_member(m.entry);
  }
  state.local.set_port(domain, {});
  state.views.forget(domain);
  return ctx->delete_resource(domain);
}

int rocl_domain_context(rocl_gid_t domain, uint32_t *context) {
  constexpr const char *who = "rocl_domain_context";
  Context *ctx = context_for(who);
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (context == nullptr) return fail(ROCL_EINVAL, "%s: context is NULL", who);
  return rocl::impl::domain_state(*ctx).views.context_of(who, domain, context);
}

int rocl_domain_join(rocl_gid_t domain, rocl_gid_t member, const char *local_name, int *index) {
  constexpr const char *who = "rocl_domain_join";
  Context *ctx = context_for(who);
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (int rc = check_name(who, "local_name", local_name, false); rc != ROCL_OK) return rc;
  DomainState &state = rocl::impl::domain_state(*ctx);
  rocl::impl::DomainRecord record;
  if (int rc = state.views.entries().read(who, domain, &record); rc != ROCL_OK) return rc;
  rocl_gid_t owner = ROCL_NULL_GID;
  if (int rc = state.views.entries().owner_of(who, member, &owner); rc != ROCL_OK) return rc;
  if (owner != ctx->gid()) {
    return fail(ROCL_EBADGID, "%s: member %#llx is a resource of context %#llx, not of this one",
                who, ull(member), ull(owner));
  }
  if (!state.local.start_join(domain, member)) {
    return fail(ROCL_EEXIST, "%s: %#llx is a member of domain %#llx already (or joining it)", who,
                ull(member), ull(domain));
  }
  MemberRecord joined;
  const int rc = state.views.entries().join(who, domain, member, name_of(local_name), &joined);
  state.local.finish_join(domain, member,
                          rc == ROCL_OK ? std::optional<MemberRecord>(joined) : std::nullopt);
  if (rc == ROCL_OK && index != nullptr) *index = joined.index;
  return rc;
}

int rocl_domain_leave(rocl_gid_t domain, rocl_gid_t member) {
  constexpr const char *who = "rocl_domain_leave";
  Context *ctx = context_for(who);
  if (ctx == nullptr) return ROCL_ENOINIT;
  DomainState &state = rocl::impl::domain_state(*ctx);
  const std::optional<MemberRecord> m = state.local.take(domain, member);
  if (!m) {
    return fail(ROCL_ENOTFOUND, "%s: %#llx is not a member of domain %#llx (joined here)", who,
                ull(member), ull(domain));
  }
  state.views.forget(domain);
  const int rc = state.views.entries().remove_member(m->entry);
  return rc == ROCL_EBADGID ? ROCL_OK : rc;  // gone with a deleted domain's cleanup already
}

int rocl_domain_lookup(rocl_gid_t domain, const char *local_name, rocl_gid_t *member) {
  constexpr const char *who = "rocl_domain_lookup";
  Context *ctx = context_for(who);
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (member == nullptr) return fail(ROCL_EINVAL, "%s: member is NULL", who);
  if (int rc = check_name(who, "local_name", local_name, true); rc != ROCL_OK) return rc;
  DomainState &state = rocl::impl::domain_state(*ctx);
  std::uint32_t context = 0;
  if (int rc = state.views.context_of(who, domain, &context); rc != ROCL_OK) return rc;
  MemberRecord m;
  const int rc = state.views.entries().member_where(who, domain, "rocl.local", local_name, &m);
  if (rc == ROCL_ENOTFOUND) {
    return fail(rc, "%s: no member of domain %#llx is named '%s'", who, ull(domain), local_name);
  }
  if (rc == ROCL_OK) *member = m.member;
  return rc;
}

int rocl_domain_member(rocl_gid_t domain, int index, rocl_gid_t *member) {
  constexpr const char *who = "rocl_domain_member";
  Context *ctx = context_for(who);
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (member == nullptr) return fail(ROCL_EINVAL, "%s: member is NULL", who);
  if (index < 0) return fail(ROCL_EINVAL, "%s: index %d is negative", who, index);
  DomainState &state = rocl::impl::domain_state(*ctx);
  std::uint32_t context = 0;
  if (int rc = state.views.context_of(who, domain, &context); rc != ROCL_OK) return rc;
  return state.views.member_at(who, domain, index, member);
}

int rocl_domain_index(rocl_gid_t domain, rocl_gid_t member, int *index) {
  constexpr const char *who = "rocl_domain_index";
  Context *ctx = context_for(who);
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (index == nullptr) return fail(ROCL_EINVAL, "%s: index is NULL", who);
  DomainState &state = rocl::impl::domain_state(*ctx);
  std::uint32_t context = 0;
  if (int rc = state.views.context_of(who, domain, &context); rc != ROCL_OK) return rc;
  return state.views.index_of(who, domain, member, index);
}

int rocl_domain_size(rocl_gid_t domain, int *size) {
  constexpr const char *who = "rocl_domain_size";
  Context *ctx = context_for(who);
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (size == nullptr) return fail(ROCL_EINVAL, "%s: size is NULL", who);
  DomainState &state = rocl::impl::domain_state(*ctx);
  std::uint32_t context = 0;
  if (int rc = state.views.context_of(who, domain, &context); rc != ROCL_OK) return rc;
  std::vector<MemberRecord> all;
  if (int rc = state.views.members(who, domain, &all); rc != ROCL_OK) return rc;
  *size = static_cast<int>(all.size());
  return ROCL_OK;
}

int rocl_domain_port(rocl_gid_t domain, const char *network) {
  constexpr const char *who = "rocl_domain_port";
  Context *ctx = context_for(who);
  if (ctx == nullptr) return ROCL_ENOINIT;
  DomainState &state = rocl::impl::domain_state(*ctx);
  std::uint32_t context = 0;
  if (int rc = state.views.context_of(who, domain, &context); rc != ROCL_OK) return rc;
  if (network != nullptr && *network != '\0') {
    if (int rc = check_network(*ctx, who, network); rc != ROCL_OK) return rc;
  }
  state.local.set_port(domain, network != nullptr ? network : "");
  return ROCL_OK;
}

int rocl_dsend(rocl_gid_t domain, rocl_gid_t from, int to_index, int tag, void *ptr, size_t len) {
  constexpr const char *who = "rocl_dsend";
  Context *ctx = context_for(who);
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (to_index < 0) return fail(ROCL_EINVAL, "%s: to_index %d is negative", who, to_index);
  DomainState &state = rocl::impl::domain_state(*ctx);
  std::uint32_t context = 0;
  if (int rc = state.views.context_of(who, domain, &context); rc != ROCL_OK) return rc;
  const std::string port = state.local.port(domain);
  for (int attempt = 0;; ++attempt) {
    rocl_gid_t to = ROCL_NULL_GID;
    if (int rc = state.views.member_at(who, domain, to_index, &to); rc != ROCL_OK) return rc;
    const int rc = send_in(*ctx, port, from, to, tag, context, ptr, len);
    // A member whose resource is gone: what was kept may be older than its
    // leave (no removal epoch to tell); ask once more.
    if (rc != ROCL_EBADGID || attempt == 1) return rc;
    state.views.forget(domain);
  }
}

int rocl_drecv(rocl_gid_t domain, rocl_gid_t me, int from_index, int tag, void **ptr,
               int *afrom_index, int *atag, size_t *alen, int timeout) {
  constexpr const char *who = "rocl_drecv";
  Context *ctx = context_for(who);
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (ptr == nullptr) return fail(ROCL_EINVAL, "%s: ptr (where to put the buffer) is NULL", who);
  if (from_index < ROCL_ANY_INDEX) {
    return fail(ROCL_EINVAL, "%s: from_index %d is neither >= 0 nor ROCL_ANY_INDEX", who,
                from_index);
  }
  DomainState &state = rocl::impl::domain_state(*ctx);
  std::uint32_t context = 0;
  if (int rc = state.views.context_of(who, domain, &context); rc != ROCL_OK) return rc;
  rocl_gid_t from = ROCL_ANY_GID;
  if (from_index != ROCL_ANY_INDEX) {
    if (int rc = state.views.member_at(who, domain, from_index, &from); rc != ROCL_OK) return rc;
  }
  rocl_status_t st{};
  if (int rc = ctx->recv(me, from, tag, context, nullptr, 0, &st, timeout); rc != ROCL_OK)
    return rc;
  // The message is the caller's now: a sender that is no member (any
  // resource may send in the context with rocl_sendx), or one that left
  // since, is reported as ROCL_ANY_INDEX rather than failing the receive.
  int index = from_index;
  if (index == ROCL_ANY_INDEX && state.views.index_of(who, domain, st.origin, &index) != ROCL_OK) {
    index = ROCL_ANY_INDEX;
    rocl::impl::clear_error();
  }
  *ptr = st.ptr;
  if (afrom_index != nullptr) *afrom_index = index;
  if (atag != nullptr) *atag = st.tag;
  if (alen != nullptr) *alen = st.len;
  return ROCL_OK;
}

int rocl_dcast(rocl_gid_t domain, rocl_gid_t from, int tag, void *ptr, size_t len) {
  constexpr const char *who = "rocl_dcast";
  Context *ctx = context_for(who);
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (ptr == nullptr && len != 0)
    return fail(ROCL_EINVAL, "%s: ptr is NULL with len %zu", who, len);
  if (tag < 0) return fail(ROCL_EINVAL, "%s: tag %d is negative", who, tag);
  DomainState &state = rocl::impl::domain_state(*ctx);
  std::uint32_t context = 0;
  if (int rc = state.views.context_of(who, domain, &context); rc != ROCL_OK) return rc;
  std::vector<MemberRecord> all;
  if (int rc = state.views.members(who, domain, &all); rc != ROCL_OK) return rc;
  const std::string port = state.local.port(domain);
  // Each member gets a copy: a buffer of the caller's could go only once.
  rocl::impl::BlockHeader *own = user_block(*ctx, ptr);
  const std::uint32_t word = rocl::impl::domain_word(context, 0);
  int reached = 0;
  for (const MemberRecord &m : all) {
    if (m.member == from) continue;
    const int rc = own == nullptr && port.empty()
                       ? ctx->send(from, m.member, tag, word, ptr, len)
                       : send_copy(*ctx, port, from, m.member, tag, word, ptr, len);
    if (rc != ROCL_OK) {
      const std::string why = rocl::impl::last_error();
      return fail(rc, "%s: the message reached %d member(s), then index %d failed: %s", who,
                  reached, m.index, why.c_str());
    }
    ++reached;
  }
  if (own != nullptr && own->return_after_send) ctx->buffers().give_back(ptr);
  return reached;
}

}  // extern "C"
