// client_server.cpp - figure 1 of the RoCL paper with the C++ API
// (rocl.hpp): a server and a client, two std::threads of one process, each
// following its column of the figure. RAII does the returning: a Buffer
// goes back to the pool when it is destroyed, a Resource leaves the
// directory, a Context drops its reference.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string_view>
#include <thread>

#include "rocl/rocl.hpp"

namespace {

constexpr std::string_view kGreeting = "hello, server: this is the client";

void server() {
  // 1. initialize a RoCL context
  rocl::Context context;
  // 2. register resource R1 = {<type, server>}; r1.gid() is gid1
  rocl::Resource r1({{"type", "server"}});
  // 3. wait for any message sent to gid1
  std::optional<rocl::Message> msg1 = r1.recv();
  if (!msg1) throw rocl::Error(ROCL_ETIMEDOUT, "server: no message");
  // 4. process message data through msg1
  std::printf("server: received \"%.*s\" (%zu bytes, tag %d) from resource %#llx\n",
              static_cast<int>(msg1->buffer.size()), msg1->buffer.view().data(),
              msg1->buffer.size(), msg1->tag, static_cast<unsigned long long>(msg1->origin));
  // 5. return buffer msg1 to the library: its Buffer does that when it goes,
  //    at the end of this function (then r1 leaves the directory).
}

void client() {
  // 1. initialize a RoCL context
  rocl::Context context;
  // 2. register resource R2 = {<type, client>}; r2.gid() is gid2
  rocl::Resource r2({{"type", "client"}});

  // 3. discover resource {<type, server>}: its gid is gid3. The server thread
  //    may not have registered yet: wait (5 s at most) until it has.
  const rocl::gid_t gid3 =
      rocl::query_wait({{"type", "server"}}, 1, std::chrono::seconds(5)).front().gid;
  std::printf("client: found the server: resource %#llx\n", static_cast<unsigned long long>(gid3));

  // 4. obtain a buffer with a specific size
  rocl::Buffer msg2 = rocl::Buffer::get(kGreeting.size());
  // 5. prepare message data by using msg2
  std::memcpy(msg2.data(), kGreeting.data(), kGreeting.size());
  // 6. send msg2 from gid2 to gid3, and 7. return msg2 to the library: sending
  //    a Buffer&& hands the buffer over without a copy, and the library
  //    returns it once the server is done with it.
  r2.send(gid3, 0, std::move(msg2));
}

// Runs one side; a rocl error ends the process with rocl's explanation
// (_Exit: the other thread may still be inside rocl).
void run(const char *who, void (*side)()) {
  try {
    side();
  } catch (const rocl::Error &e) {
    std::fprintf(stderr, "client_server_cpp: %s: %s (%s)\n", who, e.what(),
                 rocl_strerror(e.code()));
    std::fflush(stdout);
    std::_Exit(1);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "client_server_cpp: %s: %s\n", who, e.what());
    std::fflush(stdout);
    std::_Exit(1);
  }
}

}  // namespace

int main() {
  std::thread server_thread(run, "server", server);
  std::thread client_thread(run, "client", client);
  client_thread.join();
  server_thread.join();
  std::printf("client_server_cpp: done\n");
  return 0;
}
