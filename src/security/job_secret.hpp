// job_secret.hpp - the per-job secret every connection and directory request
// of a job proves it knows, without ever sending it: the peer sends a random
// challenge, the other side answers HMAC-SHA256(secret, label | challenge).
//
// roclrun makes the secret and hands it to its processes in a 0600 file
// named by ROCL_SECRET_FILE (never in argv, where `ps` shows it).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace rocl::impl {

class JobSecret {
 public:
  static constexpr std::size_t kBytes = 32;
  using Digest = std::array<std::uint8_t, 32>;
  using Challenge = std::array<std::uint8_t, 32>;

  // 32 bytes from the kernel's random source.
  static JobSecret generate();
  // Reads a secret file (64 hex digits). ROCL_OK, or a negative code with a
  // sentence naming the path and the problem (missing, wrong mode, garbage).
  static int read_file(const std::string &path, JobSecret *out);
  // Writes it to a new file readable by the owner only (fails if it exists).
  int write_file(const std::string &path) const;
  // The secret as 64 hex digits (what a secret file holds), and back:
  // ROCL_OK, or ROCL_EINVAL with a sentence (too short, not hex).
  std::string to_hex() const;
  static int from_hex(std::string_view text, JobSecret *out);

  // HMAC-SHA256(secret, label || challenge). The label keeps an answer for
  // one purpose (e.g. "rocl-dir") from being replayed for another.
  Digest prove(std::string_view label, std::span<const std::uint8_t> challenge) const;
  // Constant-time check of a proof.
  bool verify(std::string_view label, std::span<const std::uint8_t> challenge,
              const Digest &proof) const;

  static Challenge random_challenge();
  // n bytes from the same random source as the secrets and challenges:
  // false if it failed (it throws nothing).
  static bool random_bytes(void *out, std::size_t n) noexcept;

 private:
  std::array<std::uint8_t, kBytes> key_{};
};

}  // namespace rocl::impl
