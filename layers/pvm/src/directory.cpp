// directory.cpp - the directory queries every part of the layer makes,
// with rocl's C++ exceptions turned into "not found".
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>

#include "pvm_impl.hpp"

namespace rpvm {

std::string decimal(long long value) {
  return std::to_string(value);
}

std::optional<rocl::Found> find_first(const rocl::Attributes &pattern) {
  try {
    return rocl::query(pattern);
  } catch (const rocl::Error &) {
    return std::nullopt;
  }
}

std::vector<rocl::Found> find_all(const rocl::Attributes &pattern) {
  try {
    return rocl::query_all(pattern);
  } catch (const rocl::Error &) {
    return {};
  }
}

std::int64_t register_entry(const rocl::Attributes &attributes) {
  try {
    return rocl_register(attributes.to_c().get());
  } catch (const rocl::Error &e) {
    return e.code();
  }
}

// Asks again and again, with pauses growing to 5 ms: rocl_query_wait was
// seen to miss a registration made while it waited, under load, and sleep
// until its timeout.
std::vector<rocl::Found> wait_for_entries(const rocl::Attributes &pattern, std::size_t count,
                                          int timeout_ms) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    // One answer is a single-answer query, which asks every directory
    // server of a job on several hosts directly.
    std::vector<rocl::Found> found;
    if (count == 1) {
      if (std::optional<rocl::Found> one = find_first(pattern)) found.push_back(*one);
    } else {
      found = find_all(pattern);
    }
    if (found.size() >= count) return found;
    if (timeout_ms >= 0 && std::chrono::steady_clock::now() > give_up) return {};
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
}

bool sole_claim(const rocl::Attributes &claimed, rocl_gid_t mine) {
  const std::vector<rocl::Found> all = find_all(claimed);
  return all.size() == 1 && all[0].gid == mine;
}

void pause_before_retry() {
  static thread_local unsigned seed =
      unsigned(std::chrono::steady_clock::now().time_since_epoch().count() ^
               reinterpret_cast<std::uintptr_t>(&seed));
  seed = seed * 1103515245u + 12345u;
  std::this_thread::sleep_for(std::chrono::microseconds(100 + (seed >> 8) % 2000));
}

int attribute_int(const rocl::Found &found, const char *name, int otherwise) {
  const std::optional<std::string> v = found.attributes.get(name);
  return v ? int(std::strtol(v->c_str(), nullptr, 10)) : otherwise;
}

}  // namespace rpvm
