// fuzz_util.hpp - what the libFuzzer targets of tests/fuzz/ have in common,
// so that each target's file holds its own modes, invariants and seeds and
// nothing else. Header only (a target includes it from beside itself):
// scripts/fuzz.sh builds every target from its one .cpp file and the rocl
// sources it tests, and this adds nothing to link. It uses no rocl code.
//
// What it offers (namespace rocl::fuzz, and the macro CHECK):
//   Target, CHECK(cond, format, ...)
//       Each target defines, in its own file, the constant
//         constexpr rocl::fuzz::Target kTarget{.name = "wire_fuzz"};
//       adding .last_error = rocl::impl::last_error where the code under
//       test records its refusals there (the target links
//       src/status/status.cpp then). CHECK, where it is used, finds kTarget
//       by its name. When cond is false it prints
//         <name>: <cond> failed: <format's message>
//       (": <message>" only if a format is given), then
//       " (last error: <last_error()>)" if the target named one, and a
//       newline, to stderr, and aborts: libFuzzer keeps the input as a
//       crash. The message's arguments are evaluated only on failure; the
//       format is checked as printf's.
//   Bytes, View
//       A byte vector and a read-only view of bytes.
//   as_view(data, size)
//       libFuzzer's input as a View.
//   pick_mode(data, size, {mode0, mode1, ...})
//       For targets whose first input byte picks the mode: calls mode
//       number data[0] % (the number of modes) with the rest of the input;
//       an empty input calls none.
//   Reader
//       Takes little-endian integers (u8, u16, u32, u64, get(n)) and runs of
//       bytes off the front of an input. Past the input's end it reads
//       zeros and empty runs, so that every input, however short, means
//       something; rest() is what it has not read.
//   write_file(path, bytes)
//       Writes a seed file (any vector or span of 1-byte elements); if it
//       cannot, prints why and exits 1.
//   seeds_then_exit(write_seeds)
//       For LLVMFuzzerInitialize: with ROCL_FUZZ_WRITE_SEEDS=<dir> in the
//       environment, calls write_seeds(dir) and exits 0 (scripts/fuzz.sh
//       asks each binary for its seeds this way); otherwise returns.
//
// Why: every target reports a broken invariant and writes its seeds the
// same way, and several read their input alike; one copy keeps them so.
// What stays in each target is what an input means there (targets whose
// input is not a mode byte and little-endian fields read it themselves).
// The kept corpus tests/fuzz/corpus/<target>/ holds inputs in those
// meanings, so a change to Reader or pick_mode must keep what every byte of
// an input means.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rocl::fuzz {

using Bytes = std::vector<std::byte>;
using View = std::span<const std::byte>;

struct Target {
  const char *name;                       // the binary's, e.g. "wire_fuzz"
  const char *(*last_error)() = nullptr;  // printed after a failed CHECK if set
};

namespace detail {

inline void print_failure(const Target &t, const char *cond) {
  std::fprintf(stderr, "%s: %s failed", t.name, cond);
}

[[noreturn]] inline void end_failure(const Target &t) {
  if (t.last_error != nullptr) std::fprintf(stderr, " (last error: %s)", t.last_error());
  std::fprintf(stderr, "\n");
  std::abort();
}

}  // namespace detail

// CHECK's failure without a message.
[[noreturn]] inline void fail(const Target &t, const char *cond) {
  detail::print_failure(t, cond);
  detail::end_failure(t);
}

// CHECK's failure with a message.
[[noreturn]] __attribute__((format(printf, 3, 4))) inline void fail(const Target &t,
                                                                    const char *cond,
                                                                    const char *format, ...) {
  detail::print_failure(t, cond);
  std::fprintf(stderr, ": ");
  std::va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  detail::end_failure(t);
}

inline View as_view(const std::uint8_t *data, std::size_t size) {
  return View(reinterpret_cast<const std::byte *>(data), size);
}

inline void pick_mode(const std::uint8_t *data, std::size_t size,
                      std::initializer_list<void (*)(View)> modes) {
  if (size == 0) return;
  modes.begin()[data[0] % modes.size()](as_view(data, size).subspan(1));
}

class Reader {
 public:
  explicit Reader(View in) : in_(in) {}
  bool empty() const { return at_ >= in_.size(); }
  // `bytes` (at most 8) little-endian bytes; zeros past the end.
  std::uint64_t get(std::size_t bytes) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < bytes; ++i) {
      if (at_ < in_.size()) v |= static_cast<std::uint64_t>(in_[at_++]) << (8 * i);
    }
    return v;
  }
  std::uint8_t u8() { return static_cast<std::uint8_t>(get(1)); }
  std::uint16_t u16() { return static_cast<std::uint16_t>(get(2)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(get(4)); }
  std::uint64_t u64() { return get(8); }
  // The next n bytes, fewer at the end.
  View bytes(std::size_t n) {
    const std::size_t left = in_.size() - at_;
    const View out = in_.subspan(at_, n < left ? n : left);
    at_ += out.size();
    return out;
  }
  View rest() { return bytes(in_.size() - at_); }

 private:
  View in_;
  std::size_t at_ = 0;  // never past in_.size()
};

inline void write_file(const std::string &path, View bytes) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::fclose(f);
}

template <class Container>
requires(sizeof(*std::data(std::declval<const Container &>())) ==
         1) void write_file(const std::string &path, const Container &bytes) {
  write_file(path, std::as_bytes(std::span(std::data(bytes), std::size(bytes))));
}

inline void seeds_then_exit(void (*write_seeds)(const char *dir)) {
  if (const char *dir = std::getenv("ROCL_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
}

}  // namespace rocl::fuzz

// Aborts with a message when cond is false; see the top of this file.
#define CHECK(cond, ...)                                                        \
  do {                                                                          \
    if (!(cond)) ::rocl::fuzz::fail(kTarget, #cond __VA_OPT__(, ) __VA_ARGS__); \
  } while (0)
