// buffer.cpp - PVM message buffers: the task's table of them
// (one buffer: message_buffer.cpp), and the calls that make, free, select
// and describe buffers.
#include "pvm_impl.hpp"

namespace rpvm {

int BufferTable::make(int encoding) {
  return adopt(std::make_unique<MessageBuffer>(encoding));
}

int BufferTable::adopt(std::unique_ptr<MessageBuffer> buffer) {
  const int id = next_id_++;
  buffers_.emplace(id, std::move(buffer));
  return id;
}

int BufferTable::free(int id) {
  if (buffers_.erase(id) == 0) return PvmNoSuchBuf;
  if (active_send == id) active_send = 0;
  if (active_receive == id) active_receive = 0;
  return PvmOk;
}

MessageBuffer *BufferTable::find(int id) {
  const auto it = buffers_.find(id);
  return it != buffers_.end() ? it->second.get() : nullptr;
}

}  // namespace rpvm

namespace {

bool valid_encoding(int encoding) {
  return encoding == PvmDataDefault || encoding == PvmDataRaw || encoding == PvmDataInPlace;
}

}  // namespace

extern "C" int pvm_mkbuf(int encoding) {
  return rpvm::call_locked("pvm_mkbuf", [&](rpvm::Task &t) {
    return valid_encoding(encoding) ? t.buffers.make(encoding) : PvmBadParam;
  });
}

extern "C" int pvm_initsend(int encoding) {
  return rpvm::call_locked("pvm_initsend", [&](rpvm::Task &t) {
    if (!valid_encoding(encoding)) return PvmBadParam;
    if (t.buffers.active_send != 0) t.buffers.free(t.buffers.active_send);
    return t.buffers.active_send = t.buffers.make(encoding);
  });
}

extern "C" int pvm_freebuf(int bufid) {
  return rpvm::call_locked("pvm_freebuf", [&](rpvm::Task &t) {
    return bufid < 0 ? PvmBadParam : t.buffers.free(bufid);
  });
}

extern "C" int pvm_getsbuf(void) {
  return rpvm::call_locked("pvm_getsbuf", [](rpvm::Task &t) { return t.buffers.active_send; });
}

extern "C" int pvm_getrbuf(void) {
  return rpvm::call_locked("pvm_getrbuf", [](rpvm::Task &t) { return t.buffers.active_receive; });
}

extern "C" int pvm_setsbuf(int bufid) {
  return rpvm::call_locked("pvm_setsbuf", [&](rpvm::Task &t) {
    if (bufid < 0) return PvmBadParam;
    if (bufid != 0 && t.buffers.find(bufid) == nullptr) return PvmNoSuchBuf;
    const int old = t.buffers.active_send;
    t.buffers.active_send = bufid;
    return old;
  });
}

extern "C" int pvm_setrbuf(int bufid) {
  return rpvm::call_locked("pvm_setrbuf", [&](rpvm::Task &t) {
    if (bufid < 0) return PvmBadParam;
    rpvm::MessageBuffer *b = bufid != 0 ? t.buffers.find(bufid) : nullptr;
    if (bufid != 0 && b == nullptr) return PvmNoSuchBuf;
    const int old = t.buffers.active_receive;
    t.buffers.active_receive = bufid;
    return old;
  });
}

extern "C" int pvm_bufinfo(int bufid, int *bytes, int *msgtag, int *tid) {
  return rpvm::call_locked("pvm_bufinfo", [&](rpvm::Task &t) {
    if (bufid <= 0) return PvmBadParam;
    const rpvm::MessageBuffer *b = t.buffers.find(bufid);
    if (b == nullptr) return PvmNoSuchBuf;
    if (bytes != nullptr) *bytes = int(b->size());
    if (msgtag != nullptr) *msgtag = b->origin.tag;
    if (tid != nullptr) *tid = b->origin.tid;
    return PvmOk;
  });
}

extern "C" int pvm_getminfo(int bufid, struct pvmminfo *info) {
  return rpvm::call_locked("pvm_getminfo", [&](rpvm::Task &t) {
    if (bufid <= 0 || info == nullptr) return PvmBadParam;
    const rpvm::MessageBuffer *b = t.buffers.find(bufid);
    if (b == nullptr) return PvmNoSuchBuf;
    *info = pvmminfo{
        int(b->size()), b->origin.context, b->origin.tag, 0, b->encoding(), 0, b->origin.tid,
        t.tid};
    return PvmOk;
  });
}

extern "C" int pvm_setminfo(int bufid, struct pvmminfo *info) {
  return rpvm::call_locked("pvm_setminfo", [&](rpvm::Task &t) {
    if (bufid <= 0 || info == nullptr) return PvmBadParam;
    rpvm::MessageBuffer *b = t.buffers.find(bufid);
    if (b == nullptr) return PvmNoSuchBuf;
    b->origin = {info->src, info->tag, info->ctx};
    return PvmOk;
  });
}
