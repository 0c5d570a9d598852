// job_secret.cpp - see job_secret.hpp. HMAC and randomness from OpenSSL's
// libcrypto: well-reviewed code beats our own for this.
#include "security/job_secret.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "status/status.hpp"

namespace rocl::impl {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void fill_random(std::uint8_t *out, std::size_t n) {
  if (!JobSecret::random_bytes(out, n)) {
    throw std::runtime_error("rocl: the system's random source failed");
  }
}

}  // namespace

JobSecret JobSecret::generate() {
  JobSecret s;
  fill_random(s.key_.data(), s.key_.size());
  return s;
}

bool JobSecret::random_bytes(void *out, std::size_t n) noexcept {
  return n <= static_cast<std::size_t>(INT_MAX) &&
         RAND_bytes(static_cast<unsigned char *>(out), static_cast<int>(n)) == 1;
}

JobSecret::Challenge JobSecret::random_challenge() {
  Challenge c;
  fill_random(c.data(), c.size());
  return c;
}

int JobSecret::read_file(const std::string &path, JobSecret *out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail(ROCL_EINVAL, "job secret file '%s' cannot be opened: %s", path.c_str(),
                std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || (st.st_mode & 077) != 0) {
    ::close(fd);
    return fail(ROCL_EINVAL, "job secret file '%s' is readable by others (mode %03o): refused",
                path.c_str(), static_cast<unsigned>(st.st_mode & 0777));
  }
  char text[2 * kBytes + 2] = {};
  ssize_t n = ::read(fd, text, sizeof text);
  ::close(fd);
  if (n < static_cast<ssize_t>(2 * kBytes)) {
    return fail(ROCL_EINVAL, "job secret file '%s' is too short", path.c_str());
  }
  if (from_hex(std::string_view(text, 2 * kBytes), out) != ROCL_OK) {
    return fail(ROCL_EINVAL, "job secret file '%s' holds something other than hex digits",
                path.c_str());
  }
  return ROCL_OK;
}

int JobSecret::from_hex(std::string_view text, JobSecret *out) {
  if (text.size() < 2 * kBytes) {
    return fail(ROCL_EINVAL, "a job secret of %zu hex digits (64 expected)", text.size());
  }
  for (std::size_t i = 0; i < kBytes; ++i) {
    int hi = hex_value(text[2 * i]), lo = hex_value(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return fail(ROCL_EINVAL, "a job secret with other digits than hex");
    out->key_[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return ROCL_OK;
}

std::string JobSecret::to_hex() const {
  static const char kHex[] = "0123456789abcdef";
  std::string text(2 * kBytes, '0');
  for (std::size_t i = 0; i < kBytes; ++i) {
    text[2 * i] = kHex[key_[i] >> 4];
    text[2 * i + 1] = kHex[key_[i] & 15];
  }
  return text;
}

int JobSecret::write_file(const std::string &path) const {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return fail(ROCL_EINVAL, "job secret file '%s' cannot be created: %s", path.c_str(),
                std::strerror(errno));
  }
  const std::string text = to_hex() + "\n";
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok) return fail(ROCL_EINVAL, "job secret file '%s' cannot be written", path.c_str());
  return ROCL_OK;
}

JobSecret::Digest JobSecret::prove(std::string_view label,
                                   std::span<const std::uint8_t> challenge) const {
  std::vector<std::uint8_t> message(label.begin(), label.end());
  message.push_back(0);  // so that label and challenge cannot be shifted into each other
  message.insert(message.end(), challenge.begin(), challenge.end());
  Digest d{};
  unsigned len = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()), message.data(), message.size(),
       d.data(), &len);
  return d;
}

bool JobSecret::verify(std::string_view label, std::span<const std::uint8_t> challenge,
                       const Digest &proof) const {
  Digest expected = prove(label, challenge);
  return CRYPTO_memcmp(expected.data(), proof.data(), expected.size()) == 0;
}

}  // namespace rocl::impl
