/* ncs.h - NCS, the NYNET Communication System on rocl: message passing
 * between user threads of the processes of a job, with 16 priority levels,
 * group communication, synchronisation and selectable flow and error
 * control (docs/ncs.md).
 *
 * Model. The processes are the ranks of a job started by `roclrun -n N`
 * (process ids 0..N-1; a program started alone is process 0 of 1). Each
 * process runs user threads created with NCS_t_create and scheduled by
 * NCS_start on the calling kernel thread: cooperative, highest priority
 * first, round robin within a priority. A thread runs until it blocks (a
 * receive with nothing to take, a send out of credits, a barrier, NCS_wait,
 * NCS_block), yields (NCS_yield), makes a thread of higher priority
 * runnable, or returns. A thread that computes for long without calling NCS
 * delays the other threads of its process and the handling of arrivals.
 * A thread is named by (thread id, process id); thread ids are given in
 * creation order from 0 in each process, so an SPMD program's "thread 1 of
 * process 3" is the second thread process 3 created.
 *
 * Conventions (hold for every function unless it says otherwise):
 *  - Functions return NCS_OK (0) or a value >= 0 on success, a negative
 *    NCS_E* code on failure; NCS_strerror names the code.
 *  - A failing call changes nothing (no message is taken or sent), except
 *    where the function says so (NCS_ECORRUPT drops the corrupt message).
 *  - Messaging and synchronisation calls need NCS_init (NCS_ENOINIT) and
 *    must be made by a user thread (NCS_ENOTHREAD from anywhere else). NCS
 *    is not thread safe across kernel threads: one kernel thread calls
 *    NCS_init, NCS_t_create, NCS_start and NCS_finalize, and the user
 *    threads run on it.
 *  - A message between two threads arrives in the order sent. Messages have
 *    no tags: a receive takes the oldest message that matches its source.
 */
#ifndef ROCL_NCS_H
#define ROCL_NCS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* ---- error codes --------------------------------------------------------- */

#define NCS_OK 0
#define NCS_EINVAL (-1)     /* an argument is invalid (NULL, a bad priority or mode) */
#define NCS_ENOINIT (-2)    /* NCS_init has not been called (or NCS_finalize has) */
#define NCS_EBADID (-3)     /* a thread or process id is out of range or not the caller's */
#define NCS_EWILDCARD (-4)  /* NCS_ANY where this argument takes none */
#define NCS_ETOOBIG (-5)    /* the message does not fit the caller's buffer */
#define NCS_ECORRUPT (-6)   /* the message's checksum does not match: it was dropped */
#define NCS_ENOTHREAD (-7)  /* the call needs a user thread, and the caller is not one */
#define NCS_ENOMEM (-8)     /* no memory for the message (rocl's buffer pool cap) */
#define NCS_ENOTMEMBER (-9) /* the caller is not in the group list it passed */
#define NCS_EBUSY (-10)     /* NCS is already initialised or running, or the call is nested */
#define NCS_ECOMM (-11)     /* rocl failed (a peer exited, the job is unreachable) */
#define NCS_EDEADLOCK (-12) /* every thread of a one-process job is blocked: none can wake */

/* Static text for a code ("unknown NCS error" for anything else). */
const char *NCS_strerror(int code);

/* ---- identifiers and limits ---------------------------------------------- */

/* Wildcard for the source thread or process of a receive or a wait. */
#define NCS_ANY (-1)
/* Thread ids are 0..NCS_MAX_THREADS-1 in each process. */
#define NCS_MAX_THREADS 4096
/* Priorities: NCS_PRIORITY_MAX runs first. */
#define NCS_PRIORITY_MIN 0
#define NCS_PRIORITY_MAX 15

/* A thread of the job: a list of them names a group. Lists end with an
 * entry whose thread is NCS_ANY (NCS_LIST_END). */
typedef struct NCS_id {
  int thread;
  int process;
} NCS_id;
#define NCS_LIST_END \
  { NCS_ANY, NCS_ANY }

/* ---- set-up ---------------------------------------------------------------- */

/* Flow control (NCS_init's flow): NCS_FLOW_NONE sends at once whatever the
 * receiver holds; a value n in 1..65535 is a credit window: a sending thread has
 * at most n messages to one receiving thread that the receiver has not yet
 * taken with NCS_recv, and a send beyond that blocks the sender (letting
 * the other threads run) until the receiver takes some. NCS_FLOW_CREDIT is
 * a window of 8. Applies to NCS_send and NCS_bcast. */
#define NCS_FLOW_NONE 0
#define NCS_FLOW_CREDIT 8
/* Error control (NCS_init's error): NCS_ERROR_TRUST relies on the transport
 * (rocl's shm and tcp do not lose or reorder); NCS_ERROR_CHECKSUM adds a
 * CRC32C over each message (its NCS header and payload), checked where it is
 * received: a mismatch makes the receive that would take it fail with
 * NCS_ECORRUPT. The receiver checks whatever a sender's mode was. */
#define NCS_ERROR_TRUST 0
#define NCS_ERROR_CHECKSUM 1
/* Speed mode (NCS_init_mode): NCS_SPEED_NORMAL carries messages between
 * processes over tcp only (interoperable; it sets ROCL_TRANSPORTS=tcp for
 * this process before rocl_init); NCS_SPEED_HIGH over every transport
 * rocl has (shm between processes of one host, tcp between hosts), or the
 * ones ROCL_TRANSPORTS names. NCS_SPEED_DEFAULT reads ROCL_NCS_SPEED
 * ("normal" or "high"; unset: high). */
#define NCS_SPEED_DEFAULT 0
#define NCS_SPEED_NORMAL 1
#define NCS_SPEED_HIGH 2

/* Initialises NCS in this process: rocl_init (whose ROCL_* options apply,
 * see docs/options.md), a rocl resource for the process, and the gids of
 * every process of the job (waits up to 60 s for all of them to call
 * NCS_init). Every process of the job calls it once. If rocl was already
 * initialised in this process, the speed mode cannot change its transports.
 * Returns NCS_OK, NCS_EINVAL (flow outside 0..65535, error or speed
 * unknown), NCS_EBUSY (already initialised) or NCS_ECOMM (rocl failed, the
 * others did not come, or ROCL_RANK and ROCL_SIZE make no sense;
 * rocl_last_error() says why where rocl failed). NCS_init(flow, error) is
 * NCS_init_mode(flow, error, NCS_SPEED_DEFAULT). */
int NCS_init(int flow, int error);
int NCS_init_mode(int flow, int error, int speed);

/* Ends NCS in this process. Every process of the job calls it: it waits (up
 * to 60 s, less if a process died) until all have, so that no message of
 * the job is still on its way (credits, late sends). Then it frees what NCS
 * holds (messages nobody received), deletes the process's resource and
 * drops NCS's rocl reference (rocl_exit delivers what was sent before it
 * returns). Not from a user thread (NCS_EBUSY). Returns NCS_OK, NCS_ENOINIT
 * or NCS_EBUSY. NCS_init may be called again afterwards. */
int NCS_finalize(void);

/* Creates a user thread that will run fn(arg) at the given priority
 * (NCS_PRIORITY_MIN..NCS_PRIORITY_MAX) on a stack of ROCL_NCS_STACK_KB KiB
 * (default 256; its end is guarded: an overflow faults). Before NCS_start
 * or from a running user thread. The thread is runnable at once (created
 * by a user thread of lower priority, it runs before the call returns); it
 * ends when fn returns. Returns its thread id (>= 0: 0, 1, 2, ... in creation
 * order), NCS_ENOINIT, NCS_EINVAL (fn NULL, priority out of range) or
 * NCS_ENOMEM (no stack, or NCS_MAX_THREADS reached). */
int NCS_t_create(void (*fn)(void *arg), void *arg, int priority);

/* Runs the user threads on the calling kernel thread until every one has
 * returned (threads they create included), then returns NCS_OK. While every
 * thread is blocked it waits for messages in rocl. NCS_ENOINIT, or NCS_EBUSY
 * from a user thread. May be called again after more NCS_t_create calls. */
int NCS_start(void);

/* This process's id (0..NCS_get_num_processes()-1) or NCS_ENOINIT. */
int NCS_get_my_id(void);
/* How many processes the job has, or NCS_ENOINIT. */
int NCS_get_num_processes(void);
/* The calling user thread's id, NCS_ENOINIT or NCS_ENOTHREAD. */
int NCS_get_my_thread(void);

/* ---- point to point --------------------------------------------------------- */

/* Sends size bytes at data from (from_thread, from_process), which must be
 * the calling thread and this process, to thread to_thread of process
 * to_process (any id below NCS_MAX_THREADS: a thread not yet created there
 * gets the message once it receives). The bytes are copied: data is the
 * caller's again when this returns. Never waits for the receiver, except
 * for credits under a credit window (the thread blocks, others run).
 * Returns NCS_OK, NCS_EWILDCARD (any id NCS_ANY), NCS_EBADID, NCS_EINVAL
 * (data NULL with size > 0), NCS_ENOMEM, NCS_ECOMM, NCS_EDEADLOCK (waiting
 * for credits nobody can return), NCS_ENOINIT, NCS_ENOTHREAD. */
int NCS_send(int from_thread, int from_process, int to_thread, int to_process, const void *data,
             size_t size);

/* Receives, for (to_thread, to_process), which must be the calling thread
 * and this process, the oldest message from thread from_thread of process
 * from_process; either may be NCS_ANY. Blocks the calling thread until one
 * is there; the other threads run meanwhile.
 * data and size, both not NULL, say where the payload goes:
 *  - *data == NULL: NCS hands over its own buffer: on NCS_OK *data points
 *    to the payload, which the caller owns and returns with NCS_free (also
 *    for a 0-byte message), and *size is its length. *size is ignored on
 *    the way in.
 *  - *data != NULL: the caller's buffer of *size bytes: the payload is
 *    copied there and *size becomes its length. If it is longer than *size:
 *    NCS_ETOOBIG, *size becomes the length needed and the message stays
 *    queued, to be taken by a later receive.
 * Returns NCS_OK, NCS_EWILDCARD (to_thread or to_process NCS_ANY),
 * NCS_EBADID, NCS_EINVAL, NCS_ETOOBIG, NCS_ECORRUPT (the matching message
 * failed its checksum: it is dropped, *data and *size untouched),
 * NCS_EDEADLOCK, NCS_ENOINIT, NCS_ENOTHREAD. */
int NCS_recv(int from_thread, int from_process, int to_thread, int to_process, void **data,
             size_t *size);

/* NCS_recv that also tells the sender (useful with wildcards): on NCS_OK
 * and NCS_ECORRUPT *source, if not NULL, is the message's sender. */
int NCS_recv_from(int from_thread, int from_process, int to_thread, int to_process, void **data,
                  size_t *size, NCS_id *source);

/* How many messages NCS_recv(from_thread, from_process, calling thread,
 * this process) could take now without blocking (wildcards allowed); looks
 * at what arrived first. Returns the count (>= 0) or the codes of NCS_recv. */
int NCS_probe(int from_thread, int from_process);

/* Returns a payload NCS_recv handed over (*data was NULL), before
 * NCS_finalize (the memory is rocl's buffer pool). NULL is ignored.
 * Callable from any code of the process. Returns NCS_OK or NCS_EINVAL (not
 * such a payload, or returned twice). */
int NCS_free(void *data);

/* Lets the other runnable threads of the caller's priority (and any of a
 * higher one) run; returns when the caller's turn comes again. Also takes
 * in messages that arrived. NCS_OK, NCS_ENOINIT, NCS_ENOTHREAD. */
int NCS_yield(void);

/* ---- group communication ----------------------------------------------------- */

/* 1-to-many: NCS_send of the same bytes from (from_thread, from_process)
 * to every thread of list (ending with NCS_LIST_END), in list order; the
 * receivers take them with NCS_recv. Stops at the first failure and returns
 * its code (the threads before it got the message). An entry with
 * NCS_ANY as process before the end gives NCS_EWILDCARD. */
int NCS_bcast(int from_thread, int from_process, const NCS_id *list, const void *data, size_t size);

/* Collectives: every thread of group (ending with NCS_LIST_END, no thread
 * twice) calls the same collective with the same group; calls between two
 * threads match in the order made, apart from point-to-point messages.
 * Each returns NCS_OK, NCS_EINVAL (group or a buffer NULL, an empty group),
 * NCS_EBADID (a bad entry), NCS_ENOTMEMBER (the caller is not in group),
 * NCS_ETOOBIG (a member sent a different size), NCS_ECORRUPT, NCS_ENOMEM,
 * NCS_ECOMM, NCS_EDEADLOCK, NCS_ENOINIT or NCS_ENOTHREAD. */

/* many-to-1: the root (a member) receives each member's size bytes into
 * out, member i's at out + i * size (its own included); out is ignored at
 * the others. Blocks the root until all arrived, the others not. */
int NCS_gather(const NCS_id *group, NCS_id root, const void *data, size_t size, void *out);

/* many-to-many: every member receives each member's size bytes into out
 * (member i's at out + i * size, its own included). */
int NCS_allgather(const NCS_id *group, const void *data, size_t size, void *out);

/* Returns once every member of group has called it. */
int NCS_barrier(const NCS_id *group);

/* ---- synchronisation ------------------------------------------------------------ */

/* Posts a signal to thread to_thread of process to_process (no wildcard).
 * Signals count: each is taken by one NCS_wait. Returns NCS_OK or the
 * codes of NCS_send. */
int NCS_signal(int to_thread, int to_process);

/* Blocks the calling thread until a signal from (from_thread, from_process)
 * is there (either may be NCS_ANY) and takes it. Returns NCS_OK or the
 * codes of NCS_recv. */
int NCS_wait(int from_thread, int from_process);

/* Blocks the calling thread until a thread of its process calls
 * NCS_unblock for it. An NCS_unblock that came first (while the thread was
 * not blocked here) is kept, and this returns at once, taking it; several
 * count as one. Returns NCS_OK, NCS_EDEADLOCK, NCS_ENOINIT, NCS_ENOTHREAD. */
int NCS_block(void);

/* Makes thread tid of this process runnable if it is blocked in NCS_block,
 * else keeps the wake-up for its next NCS_block. If tid has a higher
 * priority than the caller, it runs at once. Callable from a user thread
 * or, before NCS_start, from the main program. Returns NCS_OK, NCS_EBADID
 * (no such thread, or it has returned) or NCS_ENOINIT. */
int NCS_unblock(int tid);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* ROCL_NCS_H */
