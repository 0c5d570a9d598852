// runtime.hpp - one process's NCS: its place in the job, its user threads,
// the messages held for them and the flow and error control settings; how
// a message is sent, taken in and handed to a receive.
#pragma once

#include <cstddef>
#include <memory>

#include "credits.hpp"
#include "job.hpp"
#include "mailbox.hpp"
#include "scheduler.hpp"

namespace ncs {

struct Settings {
  int window = 0;         // credit window; 0: no flow control
  bool checksum = false;  // end-to-end CRC32C
  std::size_t stack_bytes = 256 * 1024;
};

class Runtime final : public Progress {
 public:
  explicit Runtime(const Settings &settings)
      : settings_(settings), scheduler_(settings.stack_bytes), credits_(settings.window) {}
  ~Runtime() override = default;

  // The process's runtime, nullptr outside NCS_init..NCS_finalize.
  static Runtime *get();
  // NCS_init's work once the arguments are checked; an NCS code.
  static int open(const Settings &settings, bool tcp_only);
  static int close();

  Job &job() { return job_; }
  Scheduler &scheduler() { return scheduler_; }

  // Sends from the running thread (blocking it while a credit window is
  // spent, for point-to-point messages). An NCS code.
  int send(Channel channel, int to_thread, int to_process, const void *data, std::size_t size);
  // Blocks the running thread until a message for it matching p is held;
  // returns it (valid until a message is taken), or nullptr and *rc.
  Message *await(const Pattern &p, int *rc);
  // Removes a message await returned and returns the credit it owes.
  Message take(Message *m);
  // Messages held for the running thread matching p, after a look at rocl.
  int count(const Pattern &p);

  void progress(int timeout_ms) override;
  bool others_can_wake() const override { return job_.processes() > 1; }

 private:
  int post(Header h, int to_process, const void *data);
  void deliver(Message m);
  void accept(void *block, std::size_t len);
  void return_credits(const Header &taken);
  void on_credits(const Header &h);
  int wait_for_credit(const Route &r);

  Settings settings_;
  Job job_;
  Scheduler scheduler_;
  Mailboxes mailboxes_;
  SendCredits credits_;
  CreditDebts debts_;
};

}  // namespace ncs
