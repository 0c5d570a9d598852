// collectives.cpp - group operations: pvm_barrier (directory entries per
// round), pvm_bcast, and pvm_reduce, pvm_gather, pvm_scatter as messages
// to and from the root in domains of their own, apart from the user's.
#include <cstring>
#include <vector>

#include "pvm_impl.hpp"

namespace rpvm {
namespace {

// The caller's membership of group, or nullptr with *code set.
GroupMembership *membership(Task &t, const char *group, int *code) {
  if (group == nullptr || *group == '\0') {
    *code = PvmNullGroup;
    return nullptr;
  }
  const auto it = t.groups.find(group);
  if (it == t.groups.end()) {
    *code = group_code_for_missing(group, PvmNotInGroup);
    return nullptr;
  }
  return &it->second;
}

// A barrier round is an entry per arriving member; a member passes once
// `count` entries of its round exist. Its entry of the round before goes
// then: every member has passed that one.
int barrier(Task &t, const char *group, int count) {
  rocl::Attributes round;
  {
    std::lock_guard guard(t.lock);
    int code = PvmOk;
    GroupMembership *m = membership(t, group, &code);
    if (m == nullptr) return code;
    round = {
        {"type", "pvm-barrier"}, {"pvm.group", group}, {"pvm.round", decimal(++m->barrier_round)}};
  }
  if (count == -1) count = int(group_members(group).size());
  if (count < 1) return PvmBadParam;
  const std::int64_t entry = register_entry(round);
  if (entry <= 0) return PvmSysErr;
  if (rocl_query_wait(round.to_c().get(), count, -1) < 0) return PvmSysErr;
  std::lock_guard guard(t.lock);
  int code = PvmOk;
  if (GroupMembership *m = membership(t, group, &code)) {
    if (m->last_barrier_entry != ROCL_NULL_GID) rocl_delete(m->last_barrier_entry);
    m->last_barrier_entry = rocl_gid_t(entry);
  } else {
    rocl_delete(rocl_gid_t(entry));
  }
  return PvmOk;
}

struct Operands {
  void *data;
  int count;
  int datatype;
  std::size_t bytes() const { return std::size_t(count) * type_size(datatype); }
};

// The root's tid, or a PVM code; *my_inst is the caller's instance.
int root_of(Task &t, const char *group, int rootginst, int *my_inst) {
  {
    std::lock_guard guard(t.lock);
    int code = PvmOk;
    const GroupMembership *m = membership(t, group, &code);
    if (m == nullptr) return code;
    *my_inst = m->instance;
  }
  return rootginst < 0 ? PvmBadParam : tid_of_instance(group, rootginst);
}

int send_to(Task &t, int tid, int tag, std::uint32_t domain, const void *bytes, std::size_t len) {
  const std::optional<rocl_gid_t> to = gid_of(tid);
  if (!to) return PvmNoTask;
  return from_rocl(rocl_sendx(t.gid, *to, tag, domain, PvmDataRaw, const_cast<void *>(bytes), len));
}

int receive_into(Task &t, int tag, std::uint32_t domain, void *into, std::size_t len) {
  rocl_status_t st{};
  char none = 0;
  const int rc =
      rocl_recvx(t.gid, ROCL_ANY_GID, tag, domain, len != 0 ? into : &none, len, &st, -1);
  if (rc != ROCL_OK) return from_rocl(rc);
  return st.len == len ? PvmOk : PvmMismatch;
}

int reduce(Task &t, void (*func)(int *, void *, void *, int *, int *), Operands op, int msgtag,
           const char *group, int rootginst) {
  if (func == nullptr || op.count < 0 || type_size(op.datatype) == 0 || msgtag < 0) {
    return PvmBadParam;
  }
  int my_inst = 0;
  const int root = root_of(t, group, rootginst, &my_inst);
  if (root < 0) return root;
  if (my_inst != rootginst) return send_to(t, root, msgtag, kReduceDomain, op.data, op.bytes());
  const int others = int(group_members(group).size()) - 1;
  std::vector<std::byte> incoming(op.bytes());
  for (int i = 0; i < others; ++i) {
    if (int rc = receive_into(t, msgtag, kReduceDomain, incoming.data(), op.bytes())) return rc;
    int info = PvmOk;
    func(&op.datatype, op.data, incoming.data(), &op.count, &info);
    if (info < 0) return info;
  }
  return PvmOk;
}

// Each contribution travels with its sender's instance in front.
int gather(Task &t, void *result, Operands op, int msgtag, const char *group, int rootginst) {
  if (op.count < 0 || type_size(op.datatype) == 0 || msgtag < 0) return PvmBadParam;
  int my_inst = 0;
  const int root = root_of(t, group, rootginst, &my_inst);
  if (root < 0) return root;
  std::vector<std::byte> piece(sizeof(int) + op.bytes());
  std::memcpy(piece.data(), &my_inst, sizeof my_inst);
  if (op.bytes() != 0) std::memcpy(piece.data() + sizeof(int), op.data, op.bytes());
  if (my_inst != rootginst) {
    return send_to(t, root, msgtag, kGatherDomain, piece.data(), piece.size());
  }
  auto *out = static_cast<std::byte *>(result);
  if (op.bytes() != 0) std::memcpy(out + std::size_t(my_inst) * op.bytes(), op.data, op.bytes());
  const int others = int(group_members(group).size()) - 1;
  for (int i = 0; i < others; ++i) {
    if (int rc = receive_into(t, msgtag, kGatherDomain, piece.data(), piece.size())) return rc;
    int inst = 0;
    std::memcpy(&inst, piece.data(), sizeof inst);
    std::memcpy(out + std::size_t(inst) * op.bytes(), piece.data() + sizeof(int), op.bytes());
  }
  return PvmOk;
}

int scatter(Task &t, void *result, Operands op, int msgtag, const char *group, int rootginst) {
  if (op.count < 0 || type_size(op.datatype) == 0 || msgtag < 0) return PvmBadParam;
  int my_inst = 0;
  const int root = root_of(t, group, rootginst, &my_inst);
  if (root < 0) return root;
  if (my_inst != rootginst) return receive_into(t, msgtag, kScatterDomain, result, op.bytes());
  const auto *in = static_cast<const std::byte *>(op.data);
  for (const auto &[inst, tid] : group_members(group)) {
    const std::byte *part = in + std::size_t(inst) * op.bytes();
    if (inst == my_inst) {
      if (op.bytes() != 0) std::memcpy(result, part, op.bytes());
    } else if (int rc = send_to(t, tid, msgtag, kScatterDomain, part, op.bytes())) {
      return rc;
    }
  }
  return PvmOk;
}

}  // namespace
}  // namespace rpvm

using rpvm::Task;

extern "C" int pvm_barrier(char *group, int count) {
  return rpvm::call_unlocked("pvm_barrier",
                             [&](Task &t) { return rpvm::barrier(t, group, count); });
}

extern "C" int pvm_bcast(char *group, int msgtag) {
  return rpvm::call_locked("pvm_bcast", [&](Task &t) {
    if (group == nullptr || *group == '\0') return PvmNullGroup;
    const rpvm::MessageBuffer *b =
        t.buffers.active_send != 0 ? t.buffers.find(t.buffers.active_send) : nullptr;
    if (b == nullptr) return PvmNoBuf;
    const std::map<int, int> members = rpvm::group_members(group);
    if (members.empty()) return PvmNoGroup;
    int rc = PvmOk;
    for (const auto &[inst, tid] : members) {
      if (tid == t.tid) continue;  // PVM's bcast skips its sender
      const int one = rpvm::send_buffer(t, *b, tid, msgtag, std::uint32_t(t.context));
      if (one < 0) rc = one;
    }
    return rc;
  });
}

extern "C" int pvm_reduce(void (*func)(int *, void *, void *, int *, int *), void *data, int count,
                          int datatype, int msgtag, char *group, int rootginst) {
  return rpvm::call_unlocked("pvm_reduce", [&](Task &t) {
    return rpvm::reduce(t, func, {data, count, datatype}, msgtag, group, rootginst);
  });
}

extern "C" int pvm_gather(void *result, void *data, int count, int datatype, int msgtag,
                          char *group, int rootginst) {
  return rpvm::call_unlocked("pvm_gather", [&](Task &t) {
    return rpvm::gather(t, result, {data, count, datatype}, msgtag, group, rootginst);
  });
}

extern "C" int pvm_scatter(void *result, void *data, int count, int datatype, int msgtag,
                           char *group, int rootginst) {
  return rpvm::call_unlocked("pvm_scatter", [&](Task &t) {
    return rpvm::scatter(t, result, {data, count, datatype}, msgtag, group, rootginst);
  });
}
