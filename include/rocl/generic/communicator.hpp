// communicator.hpp - the EPOS generic Communicator (Sanches, Secco, Froehlich,
// sections 2 and 4.3): the four message queues of an MPI-like protocol,
// matched by the protocol's own Header, so that layers above (the rocl core,
// an MPI layer) do not each re-implement ordering, queue handling and
// rendezvous.
//
//   expected     posted receives waiting for a message (the earliest one,
//                when it was posted alone, kept beside the lock: post())
//   unexpected   arrived messages waiting for a receive
//   requested    rendezvous requests waiting for their send
//   unrequested  rendezvous sends waiting for their request
//
// Matching rules (MPI's): a message goes to the matching receive posted
// earliest; a receive takes the matching message that arrived earliest (so
// messages with the same header never overtake each other); the same for
// sends and requests.
//
// This is the hot path of thread-to-thread messaging, so: every operation
// holds the lock for a few dozen instructions, never blocks otherwise, never
// allocates per message once the headers in use have been seen, and wakes
// waiters only after it has released the lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "rocl/generic/envelope.hpp"
#include "rocl/generic/spin_lock.hpp"

namespace rocl::generic {

// Outcome of Communicator::deliver.
enum class Delivery {
  kMatched,  // handed to a posted receive (its complete has been signalled)
  kQueued,   // kept in the unexpected queue until a receive takes it
  kClosed,   // refused: the Communicator is closed; the caller keeps the message
};

namespace detail {

// One queue of envelopes, in two views at once:
//  - all_: every envelope, in the order it was queued. Searches with a
//    pattern walk it front to back, so the first hit is the earliest.
//  - an index from concrete header to a FIFO "bin" of the envelopes with
//    exactly that header (found with Header::operator<, O(log bins)), plus
//    one FIFO of the pattern envelopes. A concrete search looks at the front
//    of its bin and at the patterns posted before that front.
//
// Why a std::map of intrusive bins rather than something cleverer: its nodes
// never move, so envelopes can point at their bin and leave it in O(1); and
// keeping up to kMaxEmptyBins emptied bins alive means a steady exchange
// over a handful of headers never allocates. (A sorted vector of bins would
// move bins when a new header is inserted, invalidating the envelopes'
// pointers to them; a hash map would need a hash the Header concept does not
// have.)
//
// Not thread safe: the Communicator holds its lock around every call.
template <Header H>
class EnvelopeQueue {
 public:
  using E = Envelope<H>;
  using List = EnvelopeList<E>;

  struct Less {
    bool operator()(const H &a, const H &b) const { return static_cast<bool>(a < b); }
  };
  using Bins = std::map<H, List, Less>;

  // Emptied bins kept for reuse; beyond this they are freed, so a queue that
  // once saw many distinct headers does not hold on to them all.
  static constexpr std::size_t kMaxEmptyBins = 64;

  explicit EnvelopeQueue(QueueKind kind) noexcept : kind_(kind) {}
  EnvelopeQueue(const EnvelopeQueue &) = delete;
  EnvelopeQueue &operator=(const EnvelopeQueue &) = delete;

  std::size_t size() const noexcept { return size_; }

  // The earliest-queued envelope e with match(e->header), or nullptr.
  // `key` is what match compares against: a concrete key uses the index, a
  // pattern key scans everything in order.
  template <class Match>
  E *find(const H &key, Match &&match) const {
    if (size_ == 0) return nullptr;
    // One envelope (a thread waiting for its next message, the common
    // case): compare it, without the index's tree walk.
    if (size_ == 1) return match(all_.head->header) ? all_.head : nullptr;
    if (key.is_pattern()) {
      for (E *e = all_.head; e != nullptr; e = e->all_next_) {
        if (match(e->header)) return e;
      }
      return nullptr;
    }
    // Concrete: every concrete envelope that matches is in key's bin (the
    // Header contract makes <-equivalence and == agree on concrete headers),
    // so only the bin's front and the patterns queued before it compete.
    E *best = nullptr;
    if (size_ != patterns_size_) {  // some concrete envelopes are queued
      if (const List *bin = bin_of(key)) best = bin->head;
    }
    for (E *p = patterns_.head; p != nullptr; p = p->sub_next_) {
      if (best != nullptr && p->order_ > best->order_) break;
      if (match(p->header)) return p;
    }
    return best;
  }

  // Appends e with sequence number `order`. Allocates only if e's header has
  // no bin yet; throws std::bad_alloc then, having changed nothing.
  void push(E *e, std::uint64_t order) {
    List *list = enter(e);
    e->order_ = order;
    link_back<&E::all_prev_, &E::all_next_>(all_, e);
    link_back<&E::sub_prev_, &E::sub_next_>(*list, e);
    ++size_;
  }

  // For an envelope matched without being queued: the order it would have
  // had, so that reinsert can put it in its place later.
  static void set_order(E *e, std::uint64_t order) noexcept { e->order_ = order; }

  // Puts e back where it was queued before (order e->order_, kept from
  // then): after the envelopes with smaller orders, before those queued
  // since. Allocates as push does (and changes nothing if that throws).
  void reinsert(E *e) {
    List *list = enter(e);
    link_in_order<&E::all_prev_, &E::all_next_>(all_, e);
    link_in_order<&E::sub_prev_, &E::sub_next_>(*list, e);
    ++size_;
  }

  // Unlinks e, which must be in this queue (contains(e)).
  void remove(E *e) noexcept {
    unlink<&E::all_prev_, &E::all_next_>(all_, e);
    List *list = e->sub_list_;
    unlink<&E::sub_prev_, &E::sub_next_>(*list, e);
    if (list == &patterns_) {
      --patterns_size_;
    } else if (list->head == nullptr) {
      if (empty_bins_ < kMaxEmptyBins) {
        ++empty_bins_;
      } else {
        if (list == hint_list_) hint_list_ = nullptr;
        bins_.erase(e->header);
      }
    }
    clear(e);
    --size_;
  }

  // True if e is queued here. Checks the bin too, so that an envelope queued
  // in the same kind of queue of another Communicator is not mistaken for
  // one of ours (O(log bins); used by cancels only).
  bool contains(const E *e) const noexcept {
    if (e->queue_ != kind_) return false;
    if (e->sub_list_ == &patterns_) return true;
    const auto it = bins_.find(e->header);
    return it != bins_.end() && &it->second == e->sub_list_;
  }

  // Empties the queue in O(1): returns its envelopes as a chain in queue
  // order (walk it with take_next) and moves the index into `graveyard`, so
  // the caller can free it after releasing the lock.
  E *detach(Bins &graveyard) noexcept {
    E *head = all_.head;
    all_ = List{};
    patterns_ = List{};
    bins_.swap(graveyard);
    hint_list_ = nullptr;
    size_ = patterns_size_ = empty_bins_ = 0;
    return head;
  }

  // For a chain returned by detach: clears e's bookkeeping and returns the
  // next envelope. Read before handing e on, since its new owner may free it.
  static E *take_next(E *e) noexcept {
    E *next = e->all_next_;
    clear(e);
    return next;
  }

 private:
  // The list e joins besides all_ (its header's bin, made if need be, or
  // the patterns'), with e marked as queued here and the counts updated
  // but for size_. Throws std::bad_alloc before changing anything.
  // Inline, with the bin of the last header used (the hint) or the
  // patterns' list, since every post takes this path; a look in the bins
  // is enter_bin.
  [[gnu::always_inline]] List *enter(E *e) {
    List *list;
    if (e->header.is_pattern()) {
      ++patterns_size_;
      list = &patterns_;
    } else if (hint_list_ != nullptr && bool(e->header == *hint_key_)) {
      list = hint_list_;
      if (list->head == nullptr) --empty_bins_;
    } else {
      list = enter_bin(e->header);
    }
    e->queue_ = kind_;
    e->sub_list_ = list;
    return list;
  }
  // The bin of `key` (made if need be), remembered as the hint.
  [[gnu::noinline]] List *enter_bin(const H &key) {
    const auto [it, inserted] = bins_.try_emplace(key);
    List *list = &it->second;
    if (!inserted && list->head == nullptr) --empty_bins_;
    remember(it);
    return list;
  }

  // Links e before the first envelope of `list` with a larger order (at
  // the back if none): a walk from the front, for the rare reinsert.
  template <E *E::*Prev, E *E::*Next>
  static void link_in_order(List &list, E *e) noexcept {
    E *next = list.head;
    while (next != nullptr && next->order_ < e->order_) next = next->*Next;
    if (next == nullptr) {
      link_back<Prev, Next>(list, e);
      return;
    }
    e->*Next = next;
    e->*Prev = next->*Prev;
    if (next->*Prev != nullptr) {
      (next->*Prev)->*Next = e;
    } else {
      list.head = e;
    }
    next->*Prev = e;
  }

  template <E *E::*Prev, E *E::*Next>
  static void link_back(List &list, E *e) noexcept {
    e->*Prev = list.tail;
    e->*Next = nullptr;
    if (list.tail != nullptr) {
      list.tail->*Next = e;
    } else {
      list.head = e;
    }
    list.tail = e;
  }

  template <E *E::*Prev, E *E::*Next>
  static void unlink(List &list, E *e) noexcept {
    if (e->*Prev != nullptr) {
      (e->*Prev)->*Next = e->*Next;
    } else {
      list.head = e->*Next;
    }
    if (e->*Next != nullptr) {
      (e->*Next)->*Prev = e->*Prev;
    } else {
      list.tail = e->*Prev;
    }
  }

  static void clear(E *e) noexcept {
    e->queue_ = QueueKind::kNone;
    e->all_prev_ = e->all_next_ = nullptr;
    e->sub_prev_ = e->sub_next_ = nullptr;
    e->sub_list_ = nullptr;
  }

  // The bin of a concrete key: the one used last if the key is its header
  // (a stream over one header, as an MPI receiver posting a window of
  // receives has, skips the tree walk on every push and find; compare's
  // rocl-mpi-shm streams show it), else the index's.
  const List *bin_of(const H &key) const {
    if (hint_list_ != nullptr && bool(key == *hint_key_)) return hint_list_;
    const auto it = bins_.find(key);
    if (it == bins_.end()) return nullptr;
    remember(it);
    return &it->second;
  }
  void remember(typename Bins::const_iterator it) const noexcept {
    hint_key_ = &it->first;
    hint_list_ = const_cast<List *>(&it->second);
  }

  QueueKind kind_;
  std::size_t size_ = 0;
  std::size_t patterns_size_ = 0;
  std::size_t empty_bins_ = 0;
  List all_;
  List patterns_;
  Bins bins_;
  // The bin found last and its key (a node of bins_: it never moves);
  // forgotten when that bin is erased. Mutable: find() is const.
  mutable const H *hint_key_ = nullptr;
  mutable List *hint_list_ = nullptr;
};

}  // namespace detail

// The queues of one receiving endpoint. Thread safe: every member takes the
// internal Lock for a short, bounded time (plus O(queue length) for
// searches with a pattern), never blocks otherwise, and signals completions
// only after releasing it.
//
// Envelopes stay owned by their creators; the Communicator borrows them
// while they are queued (see Envelope). Destroying a Communicator does not
// touch queued envelopes: close() it first to hand them back.
//
// Allocation: a queue allocates only when it meets a header it has no bin
// for; up to 64 emptied bins per queue are kept, so steady traffic over up
// to 64 distinct headers allocates nothing. If that allocation fails the
// call throws std::bad_alloc and changes nothing.
template <Header H, class Lock = SpinLock>
class Communicator {
 public:
  using Env = Envelope<H>;

  Communicator() = default;
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  // A message has arrived; msg->header must be concrete. Never blocks.
  // - Matched: the matching receive posted earliest (exact and pattern
  //   receives compete by posting time) is unqueued, recv->matched = msg and
  //   msg->matched = recv, then recv->complete is signalled after the lock is
  //   released, as the last touch of recv. The caller keeps msg (the
  //   receiver learns it through recv->matched). If that receive spins
  //   (post_spinning), msg is handed to it through the hand-off word
  //   instead (nothing is signalled).
  // - Queued: msg joins the unexpected queue, borrowed until a receive, or
  //   close()'s on_drop, hands it on.
  // - Closed: nothing is touched; the caller keeps msg.
  Delivery deliver(Env *msg) {
    Env *recv;
    const Delivery d = deliver(msg, &recv);
    if (recv != nullptr) recv->complete.signal();
    return d;
  }

  // As deliver(msg), but a matched receive is not signalled: it comes back
  // in *to_signal (nullptr unless matched, or handed to a spinning
  // receive), and the caller signals its
  // complete at once, as its last touch of it (the rocl core signals its
  // own thread's receive without a locked instruction: signal_own).
  Delivery deliver(Env *msg, Env **to_signal) {
    return deliver_if(msg, to_signal, [] { return true; });
  }

  // ---- The hand-off to a spinning receive ------------------------------
  // The one-way time between two threads is the cache lines a message
  // moves from core to core. A sender that delivers under the lock moves
  // two in a row before the receiver sees anything (the lock's line, then
  // the receive's envelope, which the receiver reads back), and writes the
  // lock's line several times while the receiver may look at it. Here a
  // receive whose owner spins (post_spinning) publishes a ticket in one
  // word on the lock's line, beside its header; a sender whose message
  // matches swaps the ticket for the message's address with one
  // compare-and-swap, and the spinning owner, which watches that word,
  // takes it from there: one line, written once. deliver() does the swap
  // under the lock; an endpoint built on this one may do it without
  // (the rocl core's mailbox: hand_to_waiter).
  //
  // The word, `handoff_`: idle (0); a ticket ((posting order << 2) | 1,
  // never the same twice, as posting orders are not, even across a
  // derived endpoint's reopening) while the earliest posted receive, posted alone, spins; a
  // message's address | 2 once a sender handed it over; kSettled (3) once
  // a locked call claimed the receive (deliver, a derived claim) or close()
  // completed it. From a ticket on, the word is its receive's owner's: no
  // new ticket is published until the owner has read the outcome
  // (take_handed) or withdrawn it, which idle the word again.

  // As take_or_post_receive. When recv is posted as the only receive and
  // the word is idle, *ticket is its ticket (else 0): recv is then
  // completed either as any posted receive (its completion) or by a
  // hand-off. Its owner waits while waiting_on(*ticket), then calls
  // take_handed (or withdraw() first, to wait on the completion alone).
  Env *post_spinning(Env *recv, std::uint64_t *ticket) {
    return post_or_take(recv, /*signal_taken=*/false, ticket);
  }

  // Whether the receive with this ticket still waits for a hand-off (no
  // lock; one load of the word the owner spins on).
  bool waiting_on(std::uint64_t ticket) const noexcept {
    return handoff_.load(std::memory_order_acquire) == ticket;
  }

  // The owner gives up spinning: its receive stays posted, to be completed
  // through its completion only (true). False if a hand-off or a locked
  // call came first: take_handed tells which.
  bool withdraw(std::uint64_t ticket) {
    std::lock_guard<Lock> guard(lock_);
    std::uint64_t expected = ticket;
    if (!handoff_.compare_exchange_strong(expected, kIdle, std::memory_order_relaxed)) return false;
    waiter_spins_ = false;  // waiter_ stays: an ordinary posted receive now
    return true;
  }

  // For the owner of recv, once !waiting_on(ticket) (or withdraw failed):
  // the message handed to recv (matched both ways), or nullptr if a locked
  // call claimed recv or close() completed it (its completion is signalled
  // or about to be: wait on it). Idles the word either way. Never locks.
  Env *take_handed(Env *recv, std::uint64_t ticket) noexcept {
    const std::uint64_t now = handoff_.load(std::memory_order_acquire);
    if (now == ticket) return nullptr;                 // misuse: still waiting; nothing changes
    handoff_.store(kIdle, std::memory_order_relaxed);  // nobody else writes it now
    if ((now & kTagMask) != kHandedTag) return nullptr;
    Env *msg = reinterpret_cast<Env *>(now & ~kTagMask);
    msg->matched = recv;
    recv->matched = msg;
    return msg;
  }

  // Posts a receive; recv->header may be a pattern. Never blocks. First
  // resets recv->matched, recv->status and recv->complete (the caller must
  // not share recv with anyone yet).
  // - If unexpected messages match, the one that arrived earliest is
  //   unqueued, matched both ways and returned; recv->complete is signalled
  //   as well, so that callers may always just wait on it.
  // - Otherwise recv joins the expected queue and nullptr is returned; a
  //   later deliver(), or close(), will complete it. Until its completion is
  //   done (or cancel_receive returned true) the owner must keep recv alive.
  // - If closed: recv->status = the close status, recv->complete is
  //   signalled, nullptr is returned.
  Env *post_receive(Env *recv) { return post_or_take(recv, /*signal_taken=*/true, nullptr); }

  // As post_receive, for an owner that takes a returned message from the
  // return value and never waits on recv then: a message found queued
  // leaves recv->complete unsignalled (still reset), which saves a locked
  // instruction per message a receive finds waiting (a stream's receiver
  // finds most of them so). Everything else as post_receive, the closed
  // case included (signalled).
  Env *take_or_post_receive(Env *recv) {
    return post_or_take(recv, /*signal_taken=*/false, nullptr);
  }
  // Withdraws a receive posted here. True if it was still queued: it is
  // unqueued and will never be matched or signalled, and the owner has it
  // back. False if it was already matched or completed by close(): then its
  // completion is (or is about to be) signalled, and the owner must wait for
  // it before reusing or destroying recv. Never blocks.
  // A spinning receive (post_spinning) cancelled this way leaves the word
  // idle; false if a hand-off took it (take_handed has it).
  bool cancel_receive(Env *recv) {
    std::lock_guard<Lock> guard(lock_);
    sync_waiter();
    if (closed_ || (recv != waiter_ && !expected_.contains(recv))) return false;
    return unpost(recv, kIdle);
  }

 protected:
  // ---- For an endpoint built on this one ------------------------------
  // A derived class may add entry points of its own (the rocl core's
  // mailbox adds deliveries to an endpoint its caller does not hold alive,
  // a lock-free hand-off, claims and requeues) from the steps below and the
  // members after close(): each takes lock_ itself where it says so, and
  // otherwise requires it held; none of them signals a completion, which
  // callers do after releasing the lock.
  // As deliver(msg, to_signal), and under the lock still_mine() must say
  // the endpoint is still the one the caller meant, else kClosed and
  // nothing changed.
  template <class StillMine>
  Delivery deliver_if(Env *msg, Env **to_signal, StillMine still_mine) {
    *to_signal = nullptr;
    std::lock_guard<Lock> guard(lock_);
    if (closed_ || !still_mine()) return Delivery::kClosed;
    if (hand_to_spinning_waiter(msg)) return Delivery::kMatched;  // nothing to signal
    Env *recv = take_posted(msg->header);
    if (recv == nullptr) {
      msg->matched = nullptr;
      unexpected_.push(msg, next_order_++);
      note_queued();
      return Delivery::kQueued;
    }
    recv->matched = msg;
    msg->matched = recv;
    Queue::set_order(msg, next_order_++);  // its place in arrival order (a requeue)
    *to_signal = recv;
    return Delivery::kMatched;
  }

  // ticket: nullptr for a receive that does not spin (post_spinning).
  // still_mine: under the lock, whether the endpoint is still the one the
  // caller meant; if not (and open), *gone is set and nothing changes.
  Env *post_or_take(Env *recv, bool signal_taken, std::uint64_t *ticket) {
    return post_or_take(
        recv, signal_taken, ticket, [] { return true; }, nullptr);
  }
  template <class StillMine>
  Env *post_or_take(Env *recv, bool signal_taken, std::uint64_t *ticket, StillMine still_mine,
                    bool *gone) {
    recv->matched = nullptr;
    recv->status = 0;
    recv->complete.reset();
    if (ticket != nullptr) *ticket = 0;
    Env *msg = nullptr;
    {
      std::lock_guard<Lock> guard(lock_);
      if (closed_) {
        recv->status = close_status_;
      } else if (!still_mine()) {
        *gone = true;
        return nullptr;
      } else {
        msg = take_unexpected(recv, [](const Env &) { return true; });
        if (msg == nullptr) {
          const std::uint64_t t = post(recv, ticket != nullptr);
          if (ticket != nullptr) *ticket = t;
          return nullptr;  // recv is shared from here on: no more touching it
        }
        if (!signal_taken) return msg;
      }
    }
    recv->complete.signal();
    return msg;
  }

 public:
  // The header of the unexpected message that arrived earliest among those
  // matching `pattern` (which may be concrete), without removing it; its
  // length (Envelope::length) in *length if length != nullptr. Never
  // blocks.
  std::optional<H> probe(const H &pattern, std::size_t *length = nullptr) const {
    std::lock_guard<Lock> guard(lock_);
    const Env *msg = unexpected_.find(
        pattern, [&pattern](const H &arrived) { return bool(arrived == pattern); });
    if (msg == nullptr) return std::nullopt;
    if (length != nullptr) *length = msg->length;
    return msg->header;
  }

  // Rendezvous, sender side: a send whose contents wait for a request.
  // send->header must be concrete. First resets send->matched, send->status
  // and send->complete. Never blocks.
  // - If parked requests match (send->header == req->header), the one that
  //   arrived earliest is unqueued, matched both ways and returned: the
  //   caller transfers the data now. Nothing is signalled: when the transfer
  //   is done is the caller's policy.
  // - Otherwise send is parked in the unrequested queue (borrowed until
  //   request_arrived returns it, cancel_send or close()'s on_drop) and
  //   nullptr is returned.
  // - If closed: send->status = the close status, send->complete is
  //   signalled, nullptr is returned; the caller keeps send.
  Env *post_rendezvous_send(Env *send) {
    return park_or_match(send, unrequested_, requested_, /*arriving_is_send=*/true);
  }

  // Rendezvous, sender side: a request for data has arrived; req->header
  // may be a pattern. The mirror of post_rendezvous_send: returns the
  // earliest parked send with send->header == req->header (unqueued, matched
  // both ways, nothing signalled), or parks req in the requested queue and
  // returns nullptr. If closed: req->status = the close status,
  // req->complete is signalled, nullptr is returned. Never blocks.
  Env *request_arrived(Env *req) {
    return park_or_match(req, requested_, unrequested_, /*arriving_is_send=*/false);
  }

  // Withdraws a send parked by post_rendezvous_send. True if it was still
  // parked (the owner has it back); false if a request took it or close()
  // handed it to on_drop. Never blocks.
  bool cancel_send(Env *send) {
    std::lock_guard<Lock> guard(lock_);
    if (closed_ || !unrequested_.contains(send)) return false;
    unrequested_.remove(send);
    return true;
  }

  // Closes the Communicator for good; idempotent (later calls do nothing and
  // do not call on_drop). Blocks only for the lock; the work below happens
  // after releasing it, so on_drop may call back into this Communicator.
  // - Every queued receive gets matched = nullptr and status = `status`, and
  //   is signalled.
  // - Every unexpected message, parked send and parked request is passed
  //   exactly once to on_drop(Env *), which takes it back (it may free it
  //   and must not throw).
  // - Afterwards deliver returns kClosed and post_receive,
  //   post_rendezvous_send and request_arrived complete at once with
  //   `status`. Use a nonzero status so that owners can tell.
  template <class F>
  void close(int status, F &&on_drop) {
    typename Queue::Bins graveyard[4];  // freed on return, outside the lock
    Env *receives;
    Env *waiter;
    Env *dropped[3];
    {
      std::lock_guard<Lock> guard(lock_);
      if (closed_) return;
      sync_waiter();
      closed_ = true;
      close_status_ = status;
      waiter = waiter_;
      if (waiter != nullptr && !unpost(waiter, kSettled)) waiter = nullptr;  // handed meanwhile
      receives = expected_.detach(graveyard[0]);
      note_posted();
      dropped[0] = unexpected_.detach(graveyard[1]);
      note_queued();
      dropped[1] = unrequested_.detach(graveyard[2]);
      dropped[2] = requested_.detach(graveyard[3]);
    }
    const auto complete_closed = [status](Env *e) {
      e->matched = nullptr;
      e->status = status;
      e->complete.signal();  // last touch of e
    };
    if (waiter != nullptr) complete_closed(waiter);  // the earliest posted receive
    for (Env *e = receives; e != nullptr;) {
      Env *next = Queue::take_next(e);
      complete_closed(e);
      e = next;
    }
    for (Env *chain : dropped) {
      for (Env *e = chain; e != nullptr;) {
        Env *next = Queue::take_next(e);
        on_drop(e);
        e = next;
      }
    }
  }

  // Number of messages waiting in the unexpected queue. Never blocks.
  std::size_t unexpected_size() const {
    std::lock_guard<Lock> guard(lock_);
    return unexpected_.size();
  }
  // Number of posted receives waiting in the expected queue.
  std::size_t expected_size() const {
    std::lock_guard<Lock> guard(lock_);
    return expected_.size() + (waiter_posted() ? 1 : 0);
  }
  // Number of parked rendezvous requests (the requested queue).
  std::size_t requested_size() const {
    std::lock_guard<Lock> guard(lock_);
    return requested_.size();
  }
  // Number of parked rendezvous sends (the unrequested queue).
  std::size_t unrequested_size() const {
    std::lock_guard<Lock> guard(lock_);
    return unrequested_.size();
  }
  // True once close() has been called.
  bool closed() const {
    std::lock_guard<Lock> guard(lock_);
    return closed_;
  }

 protected:
  using Queue = detail::EnvelopeQueue<H>;

  // Shared by the two rendezvous entry points: match `arriving` against the
  // other side's queue or park it in its own.
  Env *park_or_match(Env *arriving, Queue &park_in, Queue &match_in, bool arriving_is_send) {
    arriving->matched = nullptr;
    arriving->status = 0;
    arriving->complete.reset();
    {
      std::lock_guard<Lock> guard(lock_);
      if (!closed_) {
        // The rule is send->header == req->header whichever side arrives.
        const H &key = arriving->header;
        Env *other = match_in.find(key, [&key, arriving_is_send](const H &queued) {
          return arriving_is_send ? bool(key == queued) : bool(queued == key);
        });
        if (other == nullptr) {
          park_in.push(arriving, next_order_++);
          return nullptr;
        }
        match_in.remove(other);
        other->matched = arriving;
        arriving->matched = other;
        return other;
      }
      arriving->status = close_status_;
    }
    arriving->complete.signal();
    return nullptr;
  }

  // Posted receives: the earliest one, when it was posted while no other
  // waited, is kept in waiter_ (its header beside it) rather than in the
  // expected queue; every receive posted while one waits joins the queue,
  // so waiter_, when set, is always the earliest. Why: the common case is
  // one thread waiting for its next message, and a sender then matches it
  // on the cache line of the lock it holds anyway, instead of reading the
  // queue's lines and the envelope's (thread-to-thread one-way latency:
  // each line is a transfer between cores).
  // A receive that spins (post_spinning) and becomes waiter_ gets a ticket
  // when the word is idle (returned; else 0).
  std::uint64_t post(Env *recv, bool spins) {
    sync_waiter();
    std::uint64_t ticket = 0;
    if (waiter_ == nullptr && expected_.size() == 0) {
      waiter_ = recv;
      const std::uint64_t order = next_order_++;
      Queue::set_order(recv, order);
      waiter_header_.store(recv->header);
      if (spins && handoff_.load(std::memory_order_relaxed) == kIdle) {
        ticket = order << 2 | kWaitingTag;
        waiter_ticket_ = ticket;
        waiter_spins_ = true;
        handoff_.store(ticket, std::memory_order_release);  // header before ticket
      }
    } else {
      expected_.push(recv, next_order_++);  // may throw, having changed nothing
    }
    note_posted();
    return ticket;
  }
  // The earliest posted receive matching a message with `header`, or nullptr.
  Env *find_posted(const H &header) {
    sync_waiter();
    if (waiter_ != nullptr && bool(header == waiter_header_.load())) return waiter_;
    return expected_.find(header, [&header](const H &posted) { return bool(header == posted); });
  }
  // Unposts recv, which find_posted returned; a spinning waiter's word
  // goes from its ticket to `outcome` (kSettled: claimed or closed, its
  // completion will be signalled; kIdle: cancelled). False if a hand-off
  // took it first (then it is unposted too: sync_waiter).
  bool unpost(Env *recv, std::uint64_t outcome) noexcept {
    if (recv == waiter_) {
      if (waiter_spins_) {
        std::uint64_t expected = waiter_ticket_;
        if (!handoff_.compare_exchange_strong(expected, outcome, std::memory_order_relaxed)) {
          sync_waiter();
          return false;
        }
        waiter_spins_ = false;
      }
      waiter_ = nullptr;
    } else {
      expected_.remove(recv);
    }
    note_posted();
    return true;
  }
  // Under lock_: the earliest posted receive spins and matches msg (a
  // sender that found its ticket not yet published, and the lock taken by
  // the post that published it): msg is handed over as a lock-free swap
  // would (the owner learns it from the word it watches; nothing to
  // signal, no envelope to write), and true returned.
  bool hand_to_spinning_waiter(Env *msg) noexcept {
    sync_waiter();
    if (!waiter_spins_ || !bool(msg->header == waiter_header_.load())) return false;
    std::uint64_t expected = waiter_ticket_;
    const bool handed = handoff_.compare_exchange_strong(
        expected, handed_word(msg), std::memory_order_release, std::memory_order_relaxed);
    sync_waiter();  // handed, by us or by a sender without the lock: posted no more
    return handed;
  }
  static std::uint64_t handed_word(Env *msg) noexcept {
    return reinterpret_cast<std::uintptr_t>(msg) | kHandedTag;
  }
  // Under lock_: a spinning waiter that a sender took without the lock
  // (a derived endpoint's lock-free swap) is posted no more. Every locked call that looks at
  // waiter_ calls this first: its owner may have taken the message and
  // returned, so waiter_ must not be touched.
  void sync_waiter() noexcept {
    if (waiter_spins_ && handoff_.load(std::memory_order_relaxed) != waiter_ticket_) {
      waiter_ = nullptr;
      waiter_spins_ = false;
      ++next_order_;  // the message's arrival, as deliver() would count it
      note_posted();
    }
  }
  // Under lock_: whether recv, which find_posted returned, is the receive
  // that spins on the hand-off word (its owner may be handed a message
  // without the lock and return at any moment).
  bool spins(const Env *recv) const noexcept { return recv == waiter_ && waiter_spins_; }
  // Whether waiter_ is still posted (for const callers, which cannot sync).
  bool waiter_posted() const noexcept {
    return waiter_ != nullptr &&
           !(waiter_spins_ && handoff_.load(std::memory_order_relaxed) != waiter_ticket_);
  }
  // Under lock_: the earliest unexpected message matching recv->header, if
  // accepts(it), unqueued and matched both ways with recv; else nullptr.
  template <class Accepts>
  Env *take_unexpected(Env *recv, Accepts accepts) {
    Env *msg = take_unexpected(recv->header, accepts);
    if (msg == nullptr) return nullptr;
    msg->matched = recv;
    recv->matched = msg;
    return msg;
  }
  // The earliest queued message matching `pattern`, unqueued if
  // accepts(it) (its `matched` as it was), or nullptr.
  template <class Accepts>
  Env *take_unexpected(const H &pattern, Accepts accepts) {
    Env *msg = unexpected_.find(pattern,
                                [&pattern](const H &arrived) { return bool(arrived == pattern); });
    if (msg == nullptr || !accepts(static_cast<const Env &>(*msg))) return nullptr;
    unexpected_.remove(msg);
    note_queued();
    return msg;
  }
  Env *take_posted(const H &header) {
    Env *recv;
    do {
      recv = find_posted(header);
    } while (recv != nullptr && !unpost(recv, kSettled));  // handed meanwhile: look again
    return recv;
  }
  void note_posted() noexcept {
    posted_.store(waiter_ != nullptr || expected_.size() != 0, std::memory_order_relaxed);
  }
  void note_queued() noexcept { queued_.store(unexpected_.size() != 0, std::memory_order_relaxed); }

  // A header in words that a sender may read without the lock
  // (a lock-free hand-off) while a locked call writes it (post).
  class SharedHeader {
   public:
    void store(const H &h) noexcept {
      std::uint64_t words[kWords] = {};
      __builtin_memcpy(words, &h, sizeof h);
      for (std::size_t i = 0; i < kWords; ++i) words_[i].store(words[i], std::memory_order_relaxed);
    }
    H load() const noexcept {
      std::uint64_t words[kWords];
      for (std::size_t i = 0; i < kWords; ++i) words[i] = words_[i].load(std::memory_order_relaxed);
      H h;
      __builtin_memcpy(&h, words, sizeof h);
      return h;
    }

   private:
    static constexpr std::size_t kWords = (sizeof(H) + 7) / 8;
    std::atomic<std::uint64_t> words_[kWords] = {};
  };

  static constexpr std::uint64_t kIdle = 0;
  static constexpr std::uint64_t kTagMask = 3;
  static constexpr std::uint64_t kWaitingTag = 1;
  static constexpr std::uint64_t kHandedTag = 2;
  static constexpr std::uint64_t kSettled = 3;
  static_assert(alignof(Env) > kTagMask, "an envelope's address leaves the tag bits free");

  // The fields a delivery to a waiting receive touches come first, so that
  // they share the lock's cache line (with the 8 bytes of an rocl
  // Resource's gid before them: resource.hpp checks it with
  // hot_prefix_bytes).
  mutable Lock lock_;
  bool closed_ = false;
  bool waiter_spins_ = false;  // waiter_ has waiter_ticket_ (post_spinning)
  // Whether receives are posted, messages queued (hints read without the
  // lock), written under lock_.
  std::atomic<bool> posted_{false};
  std::atomic<bool> queued_{false};
  Env *waiter_ = nullptr;                      // post()
  std::atomic<std::uint64_t> handoff_{kIdle};  // the hand-off word
  SharedHeader waiter_header_;
  std::uint64_t next_order_ = 0;  // posting/arrival time, shared by all queues
  std::uint64_t waiter_ticket_ = 0;
  int close_status_ = 0;
  Queue expected_{detail::QueueKind::kExpected};
  Queue unexpected_{detail::QueueKind::kUnexpected};
  Queue requested_{detail::QueueKind::kRequested};
  Queue unrequested_{detail::QueueKind::kUnrequested};

  template <Header H2, class Lock2>
  friend constexpr std::size_t hot_prefix_bytes() noexcept;
};

// The bytes at the start of a Communicator that a delivery to a waiting
// receive touches (the lock through the waiting receive's header): an
// owner that wants them on one cache line with fields of its own checks
// this with a static_assert.
template <Header H, class Lock = SpinLock>
constexpr std::size_t hot_prefix_bytes() noexcept {
  using C = Communicator<H, Lock>;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
  static_assert(offsetof(C, lock_) == 0, "the lock opens the hot line");
  return offsetof(C, waiter_header_) + sizeof(typename C::SharedHeader);
#pragma GCC diagnostic pop
}

}  // namespace rocl::generic
