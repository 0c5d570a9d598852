// collectives.cpp - group operations: pvm_barrier, pvm_bcast, and
// pvm_reduce, pvm_gather, pvm_scatter: messages to and from one member (the
// coordinator, the root) in domains of their own, apart from the user's.
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

// The tag of a group's barrier messages: its name hashed (FNV-1a).
int barrier_tag(const char *group) {
  std::uint32_t h = 2166136261u;
  for (const char *c = group; *c != '\0'; ++c) h = (h ^ std::uint8_t(*c)) * 16777619u;
  return int(h & 0x7fffffff);
}

// The group's lowest instance coordinates: every other caller tells it
// that it arrived and waits for its release; it waits for count - 1
// arrivals and releases them. A caller whose group has fewer than count
// members waits until it has as many (PVM's barrier waits for count
// callers, so they must all have joined). Messages, not directory entries, so that a
// member may leave or exit as soon as it has passed.
int barrier(Task &t, const char *group, int count) {
  {
    std::lock_guard guard(t.lock);
    int code = PvmOk;
    if (membership(t, group, &code) == nullptr) return code;
  }
  std::map<int, int> members = group_members(group);
  if (members.empty()) return PvmNoGroup;
  if (count == -1) count = int(members.size());
  if (count < 1) return PvmBadParam;
  // Tasks that are still joining may call the barrier with the group's
  // final size: the coordinator is chosen once that many have joined, so
  // that every caller picks the same one.
  if (int(members.size()) < count) {
    wait_for_entries(group_pattern(group), std::size_t(count), -1);
    members = group_members(group);
  }
  const int tag = barrier_tag(group), coordinator = members.begin()->second;
  const std::optional<rocl_gid_t> coordinator_gid = gid_of(coordinator);
  if (!coordinator_gid) return PvmNoTask;
  rocl_status_t st{};
  char none = 0;
  if (coordinator != t.tid) {
    int rc = rocl_sendx(t.gid, *coordinator_gid, tag, kBarrierDomain, 0, &none, 0);
    if (rc == ROCL_OK) {
      rc = rocl_recvx(t.gid, *coordinator_gid, tag, kBarrierDomain, &none, 0, &st, -1);
    }
    return from_rocl(rc);
  }
  std::vector<rocl_gid_t> arrived;
  for (int i = 1; i < count; ++i) {
    const int rc = rocl_recvx(t.gid, ROCL_ANY_GID, tag, kBarrierDomain, &none, 0, &st, -1);
    if (rc != ROCL_OK) return from_rocl(rc);
    arrived.push_back(st.origin);
  }
  int result = PvmOk;
  for (rocl_gid_t g : arrived) {
    const int rc = rocl_sendx(t.gid, g, tag, kBarrierDomain, 0, &none, 0);
    if (rc != ROCL_OK) result = from_rocl(rc);
  }
  return result;
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
