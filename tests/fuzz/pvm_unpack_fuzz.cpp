// pvm_unpack_fuzz.cpp - libFuzzer target for PVM unpacking
// (layers/pvm/src/message_buffer.hpp): pvm_upk* and pvm_upkstr read items
// and strings out of a received message, whose bytes another task chose,
// through MessageBuffer::take_items and take_string. Built and run by
// scripts/fuzz.sh (clang++-14, -fsanitize=fuzzer,address,undefined), not by
// the CMake project; no task, no rocl: rocl_bfret, which returns a received
// buffer, is the fuzzer's own (free()).
//
// Input: u8 how | u8 n | n unpack operations of 3 bytes (op, count, stride)
// | the message's bytes. `how` % 3 picks how the message is held: received
// (a rocl buffer, as pvm_recv makes it), copied in one piece (as a message
// box's), or in pieces of (how / 3) % 16 + 1 bytes borrowed from the
// caller under PvmDataInPlace (as a send buffer read back with
// pvm_setrbuf). op % 10: a string (pvm_upkstr), or items of 1, 2, 4, 8 or
// 16 bytes (pvm_upkbyte ... pvm_upkdcplx); count is 0..255, stride 1..4.
// Checked against a cursor over the message's bytes: items are taken
// exactly when count * size bytes are left, and are those bytes, each at
// its stride, the memory between them untouched; a string exactly when
// its length (an int) is left, is 1 or more, its bytes are left and its
// first NUL is its last byte; then it is those bytes. A refusal is
// PvmNoData, reads nothing (the next operation starts where it would
// have) and writes nothing. What was taken packs again (put_items,
// put_string) to the bytes it was taken from, and nothing is read past
// the message's end (the output areas are exact, with a guard after).
// Any broken invariant aborts.
//
// With ROCL_FUZZ_WRITE_SEEDS=<dir> in the environment the binary writes
// seed inputs (messages packed as PVM programs pack them) to <dir> and
// exits.
#include <rocl/rocl.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "message_buffer.hpp"

#include "fuzz_util.hpp"

using rpvm::MessageBuffer;

namespace {

constexpr rocl::fuzz::Target kTarget{.name = "pvm_unpack_fuzz"};

using rocl::fuzz::Bytes;
using rocl::fuzz::View;
using rocl::fuzz::write_file;

constexpr std::size_t kItemSizes[] = {1, 2, 4, 8, 16};  // byte, short, int/float, long/double,
                                                        // dcplx; string: op % 10 == 0
constexpr std::byte kGuard{0xa5};
constexpr std::size_t kGuardBytes = 16;

std::size_t item_size(std::uint8_t op) {
  return op % 10 == 0 ? 0 : kItemSizes[(op % 10 - 1) % 5];
}

// Memory for an unpack: `bytes` of room filled with the guard, and guard
// bytes after it.
struct Area {
  explicit Area(std::size_t bytes) : room(bytes), mem(bytes + kGuardBytes, kGuard) {}
  std::byte *data() { return mem.data(); }
  // By memcmp against guard bytes: a loop comparing byte by byte, traced
  // by the fuzzer's instrumentation, took most of each run's time.
  bool untouched_from(std::size_t from) const {
    static const Bytes guard(4096, kGuard);
    for (std::size_t i = from; i < mem.size(); i += guard.size()) {
      const std::size_t n = std::min(guard.size(), mem.size() - i);
      if (std::memcmp(mem.data() + i, guard.data(), n) != 0) return false;
    }
    return true;
  }
  std::size_t room;
  Bytes mem;
};

std::unique_ptr<MessageBuffer> hold(std::uint8_t how, View message, Bytes &borrowed) {
  switch (how % 3) {
    case 0: {  // received: a "rocl buffer" the MessageBuffer returns
      void *copy = std::malloc(message.size() + 1);
      if (!message.empty()) std::memcpy(copy, message.data(), message.size());
      return std::make_unique<MessageBuffer>(copy, message.size(), PvmDataDefault);
    }
    case 1: {
      auto b = std::make_unique<MessageBuffer>(PvmDataDefault);
      b->append(message.data(), message.size());
      return b;
    }
    default: {
      borrowed.assign(message.begin(), message.end());
      auto b = std::make_unique<MessageBuffer>(PvmDataInPlace);
      const std::size_t piece = (how / 3) % 16 + 1;
      for (std::size_t at = 0; at < borrowed.size(); at += piece) {
        const std::size_t n = std::min(piece, borrowed.size() - at);
        b->append(borrowed.data() + at, n, true);
      }
      return b;
    }
  }
}

// One string: true if taken, at *at, and repacked into `again`.
bool string_op(MessageBuffer &b, View message, std::size_t *at, MessageBuffer &again) {
  const std::size_t left = message.size() - *at;
  CHECK(b.left() == left, "left %zu, the cursor says %zu", b.left(), left);
  int len = -1;
  if (left >= sizeof len) std::memcpy(&len, message.data() + *at, sizeof len);
  const bool whole = left >= sizeof len && len >= 1 && std::size_t(len) <= left - sizeof len;
  const char *text = reinterpret_cast<const char *>(message.data() + *at + sizeof len);
  const bool ok = whole && ::strnlen(text, std::size_t(len)) == std::size_t(len) - 1;
  Area s(whole ? std::size_t(len) : 0);
  const int rc = b.take_string(reinterpret_cast<char *>(s.data()));
  if (!ok) {
    CHECK(rc == PvmNoData, "take_string %d for a string that is not one (len %d, left %zu)", rc,
          len, left);
    CHECK(s.untouched_from(0), "a refused string was written");
    CHECK(b.left() == left, "a refused string read %zu bytes", left - b.left());
    return false;
  }
  CHECK(rc == PvmOk, "take_string %d for a string of %d bytes", rc, len);
  CHECK(std::memcmp(s.data(), text, std::size_t(len)) == 0 && s.untouched_from(std::size_t(len)),
        "the string's bytes");
  *at += sizeof len + std::size_t(len);
  CHECK(again.put_string(reinterpret_cast<const char *>(s.data())) == PvmOk, "put_string");
  return true;
}

// count items of `size` bytes, stride apart: true if taken.
bool items_op(MessageBuffer &b, View message, std::size_t *at, std::size_t size, int count,
              int stride, MessageBuffer &again) {
  const std::size_t left = message.size() - *at;
  const std::size_t want = size * std::size_t(count);
  const std::size_t span = count == 0 ? 0 : (std::size_t(count - 1) * stride + 1) * size;
  Area out(span);
  const int rc = b.take_items(out.data(), count, stride, size);
  if (want > left) {
    CHECK(rc == PvmNoData, "take_items %d for %zu bytes of %zu", rc, want, left);
    CHECK(out.untouched_from(0), "refused items were written");
    CHECK(b.left() == left, "refused items read %zu bytes", left - b.left());
    return false;
  }
  CHECK(rc == PvmOk, "take_items %d for %zu bytes of %zu", rc, want, left);
  for (int i = 0; i < count; ++i) {
    const std::byte *item = out.data() + std::size_t(i) * stride * size;
    CHECK(std::memcmp(item, message.data() + *at + std::size_t(i) * size, size) == 0,
          "item %d of %d", i, count);
    if (i + 1 < count) {
      for (std::size_t g = size; g < std::size_t(stride) * size; ++g) {
        CHECK(item[g] == kGuard, "a byte between items %d and %d written", i, i + 1);
      }
    }
  }
  CHECK(out.untouched_from(span), "a byte past the last item written");
  *at += want;
  again.put_items(out.data(), count, stride, size);
  return true;
}

void run(std::uint8_t how, View program, View message) {
  Bytes borrowed;
  std::unique_ptr<MessageBuffer> b = hold(how, message, borrowed);
  CHECK(b->size() == message.size() && b->left() == message.size(), "size %zu left %zu", b->size(),
        b->left());
  MessageBuffer again(PvmDataDefault);
  std::size_t at = 0;
  for (std::size_t i = 0; i + 3 <= program.size(); i += 3) {
    const auto op = static_cast<std::uint8_t>(program[i]);
    const int count = static_cast<int>(program[i + 1]);
    const int stride = static_cast<int>(program[i + 2]) % 4 + 1;
    const std::size_t size = item_size(op);
    if (size == 0) {
      string_op(*b, message, &at, again);
    } else {
      items_op(*b, message, &at, size, count, stride, again);
    }
    CHECK(b->left() == message.size() - at, "left %zu, the cursor says %zu", b->left(),
          message.size() - at);
  }
  Bytes packed(again.size());
  again.flatten(packed.data());
  CHECK(packed.size() == at && (at == 0 || std::memcmp(packed.data(), message.data(), at) == 0),
        "what was taken packs again to other bytes (%zu, %zu)", packed.size(), at);
  Bytes whole(b->size());
  b->flatten(whole.data());
  CHECK(whole.size() == message.size() &&
            (whole.empty() || std::memcmp(whole.data(), message.data(), whole.size()) == 0),
        "flatten");
}

// ---- seed generator ---------------------------------------------------------

struct Dcplx {
  double re, im;
};

struct Seed {
  Bytes program;
  MessageBuffer message{PvmDataDefault};
  void str(const char *s) {
    program.insert(program.end(), {std::byte{0}, std::byte{0}, std::byte{0}});
    (void)message.put_string(s);
  }
  template <class T>
  void items(std::uint8_t op, std::vector<T> v) {
    program.insert(program.end(), {std::byte{op}, static_cast<std::byte>(v.size()), std::byte{0}});
    message.put_items(v.data(), static_cast<int>(v.size()), 1, sizeof(T));
  }
  Bytes input(std::uint8_t how) const {
    Bytes in = {std::byte{how}, static_cast<std::byte>(program.size() / 3)};
    in.insert(in.end(), program.begin(), program.end());
    const std::size_t at = in.size();
    in.resize(at + message.size());
    message.flatten(in.data() + at);
    return in;
  }
};

void write_seeds(const char *dir) {
  const std::string d = std::string(dir) + "/seed-";
  Seed a;  // as layers/pvm/tests/packing.c packs
  a.items<int>(3, {1, -2, 3, 0x7fffffff});
  a.str("hello, pvm");
  a.items<double>(4, {3.5, -0.25});
  a.items<char>(1, {'a', 'b', 'c'});
  a.items<short>(2, {-7, 7});
  a.str("");
  a.items<Dcplx>(5, {{1.0, 2.0}, {3.0, 4.0}});
  for (std::uint8_t how : {0, 1, 2 + 3 * 4})
    write_file(d + "mixed-" + std::to_string(how), a.input(how));
  Seed s;  // a string whose length claims more than is there
  s.str("cut short");
  Bytes cut = s.input(1);
  cut.resize(cut.size() - 3);
  write_file(d + "string-cut", cut);
  Seed n;  // a string without its NUL
  n.str("no nul");
  Bytes nonul = n.input(1);
  nonul.back() = std::byte{'!'};
  write_file(d + "string-no-nul", nonul);
}

}  // namespace

// The fuzzer's received buffers are malloc()ed copies.
extern "C" int rocl_bfret(void *ptr) {
  std::free(ptr);
  return ROCL_OK;
}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  rocl::fuzz::seeds_then_exit(write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  const View input = rocl::fuzz::as_view(data, size);
  const std::size_t program = std::min<std::size_t>(std::size_t(data[1]) * 3, size - 2);
  run(data[0], input.subspan(2, program), input.subspan(2 + program));
  return 0;
}
