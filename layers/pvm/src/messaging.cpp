// messaging.cpp - point-to-point: pvm_send, pvm_mcast, pvm_psend and the
// receives. A PVM message is one rocl message from the sender's resource
// to the receiver's, in the domain of the sender's context, with the
// encoding in its flags.
#include <climits>

#include "pvm_impl.hpp"

namespace rpvm {
namespace {

constexpr unsigned kEncodingFlags = 0x7f;

int to_ms(const struct timeval *tmout) {
  if (tmout == nullptr) return -1;
  if (tmout->tv_sec < 0 || tmout->tv_usec < 0) return -2;
  const long long ms = (long long)tmout->tv_sec * 1000 + (tmout->tv_usec + 999) / 1000;
  return int(ms > INT_MAX ? INT_MAX : ms);
}

rocl_gid_t origin_of(int tid) {
  if (tid == -1) return ROCL_ANY_GID;
  return gid_of(tid).value_or(ROCL_NULL_GID);
}

}  // namespace

int send_buffer(Task &self, const MessageBuffer &buffer, int tid, int tag, std::uint32_t domain) {
  if (tag < 0) return PvmBadParam;
  const std::optional<rocl_gid_t> to = gid_of(tid);
  if (!to) return tid > 0 ? PvmNoTask : PvmBadParam;
  const unsigned flags = unsigned(buffer.encoding()) & kEncodingFlags;
  const std::byte *bytes = buffer.contiguous();
  if (bytes != nullptr && !buffer.in_rocl_buffer()) {
    return from_rocl(rocl_sendx(self.gid, *to, tag, domain, flags, const_cast<std::byte *>(bytes),
                                buffer.size()));
  }
  void *copy = rocl_bfget(buffer.size());
  if (copy == nullptr) return PvmNoMem;
  buffer.flatten(static_cast<std::byte *>(copy));
  rocl_bftoret(copy);
  const int rc = rocl_sendx(self.gid, *to, tag, domain, flags, copy, buffer.size());
  if (rc != ROCL_OK) rocl_bfret(copy);
  return from_rocl(rc);
}

int receive_buffer(Task &self, int tid, int tag, std::uint32_t domain, int timeout_ms,
                   const char *call) {
  (void)call;
  if (tag < -1 || tid < -1 || tid == 0 || timeout_ms < -1) return PvmBadParam;
  const rocl_gid_t from = origin_of(tid);
  if (from == ROCL_NULL_GID) return PvmNoTask;
  rocl_status_t st{};
  const int rc = rocl_recvx(self.gid, from, tag == -1 ? ROCL_ANY_TAG : tag, domain, nullptr, 0, &st,
                            timeout_ms);
  if (rc == ROCL_ETIMEDOUT) return 0;
  if (rc != ROCL_OK) return from_rocl(rc);
  auto b = std::make_unique<MessageBuffer>(st.ptr, st.len, int(st.flags & kEncodingFlags));
  b->origin = {tid_of(st.origin), st.tag, int(domain)};
  std::lock_guard guard(self.lock);
  if (self.buffers.active_receive != 0) self.buffers.free(self.buffers.active_receive);
  return self.buffers.active_receive = self.buffers.adopt(std::move(b));
}

}  // namespace rpvm

using rpvm::Task;

namespace {

int current_context(Task &t) {
  std::lock_guard guard(t.lock);
  return t.context;
}

int send_active(Task &t, int tid, int msgtag) {
  const rpvm::MessageBuffer *b =
      t.buffers.active_send != 0 ? t.buffers.find(t.buffers.active_send) : nullptr;
  if (b == nullptr) return PvmNoBuf;
  return rpvm::send_buffer(t, *b, tid, msgtag, std::uint32_t(t.context));
}

}  // namespace

extern "C" int pvm_send(int tid, int msgtag) {
  return rpvm::call_locked("pvm_send", [&](Task &t) { return send_active(t, tid, msgtag); });
}

extern "C" int pvm_mcast(int *tids, int ntask, int msgtag) {
  return rpvm::call_locked("pvm_mcast", [&](Task &t) {
    if (ntask < 0 || (tids == nullptr && ntask > 0) || msgtag < 0) return PvmBadParam;
    int rc = PvmOk;
    for (int i = 0; i < ntask; ++i) {
      if (tids[i] == t.tid) continue;  // PVM never sends a multicast to its sender
      const int one = send_active(t, tids[i], msgtag);
      if (one < 0) rc = one;
    }
    return rc;
  });
}

extern "C" int pvm_recv(int tid, int msgtag) {
  return rpvm::call_unlocked("pvm_recv", [&](Task &t) {
    return rpvm::receive_buffer(t, tid, msgtag, std::uint32_t(current_context(t)), -1, "pvm_recv");
  });
}

extern "C" int pvm_nrecv(int tid, int msgtag) {
  return rpvm::call_unlocked("pvm_nrecv", [&](Task &t) {
    return rpvm::receive_buffer(t, tid, msgtag, std::uint32_t(current_context(t)), 0, "pvm_nrecv");
  });
}

extern "C" int pvm_trecv(int tid, int msgtag, struct timeval *tmout) {
  return rpvm::call_unlocked("pvm_trecv", [&](Task &t) {
    const int ms = rpvm::to_ms(tmout);
    if (ms < -1) return PvmBadParam;
    return rpvm::receive_buffer(t, tid, msgtag, std::uint32_t(current_context(t)), ms, "pvm_trecv");
  });
}

extern "C" int pvm_probe(int tid, int msgtag) {
  return rpvm::call_unlocked("pvm_probe", [&](Task &t) {
    if (msgtag < -1 || tid < -1 || tid == 0) return PvmBadParam;
    const rocl_gid_t from = rpvm::origin_of(tid);
    if (from == ROCL_NULL_GID) return PvmNoTask;
    const int context = current_context(t);
    rocl_status_t st{};
    const int rc = rocl_probe(t.gid, from, msgtag == -1 ? ROCL_ANY_TAG : msgtag,
                              std::uint32_t(context), &st, 0);
    if (rc == ROCL_ETIMEDOUT) return 0;
    if (rc != ROCL_OK) return rpvm::from_rocl(rc);
    auto b = rpvm::MessageBuffer::described(st.len, int(st.flags & rpvm::kEncodingFlags));
    b->origin = {rpvm::tid_of(st.origin), st.tag, context};
    std::lock_guard guard(t.lock);
    if (t.probe_buffer != 0) t.buffers.free(t.probe_buffer);
    return t.probe_buffer = t.buffers.adopt(std::move(b));
  });
}

extern "C" int pvm_psend(int tid, int msgtag, void *buf, int len, int datatype) {
  return rpvm::call_locked("pvm_psend", [&](Task &t) {
    const std::size_t size = datatype == PVM_STR ? 1 : rpvm::type_size(datatype);
    if (len < 0 || size == 0 || msgtag < 0 || (buf == nullptr && len > 0)) return PvmBadParam;
    const std::optional<rocl_gid_t> to = rpvm::gid_of(tid);
    if (!to) return tid > 0 ? PvmNoTask : PvmBadParam;
    return rpvm::from_rocl(rocl_sendx(t.gid, *to, msgtag, std::uint32_t(t.context), PvmDataRaw, buf,
                                      size * std::size_t(len)));
  });
}

extern "C" int pvm_precv(int tid, int msgtag, void *buf, int len, int datatype, int *rtid,
                         int *rtag, int *rlen) {
  return rpvm::call_unlocked("pvm_precv", [&](Task &t) {
    const std::size_t size = datatype == PVM_STR ? 1 : rpvm::type_size(datatype);
    if (len < 0 || size == 0 || msgtag < -1 || tid < -1 || tid == 0) return PvmBadParam;
    const rocl_gid_t from = rpvm::origin_of(tid);
    if (from == ROCL_NULL_GID) return PvmNoTask;
    rocl_status_t st{};
    const std::size_t cap = size * std::size_t(len);
    char none = 0;  // rocl_recvx copies when `into` is not NULL, even for 0 bytes
    const int rc =
        rocl_recvx(t.gid, from, msgtag == -1 ? ROCL_ANY_TAG : msgtag,
                   std::uint32_t(current_context(t)), buf != nullptr ? buf : &none, cap, &st, -1);
    if (rc != ROCL_OK) return rpvm::from_rocl(rc);
    if (rtid != nullptr) *rtid = rpvm::tid_of(st.origin);
    if (rtag != nullptr) *rtag = st.tag;
    if (rlen != nullptr) *rlen = int(std::min(st.len, cap) / size);
    return PvmOk;
  });
}
