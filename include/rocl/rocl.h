/* rocl.h - the RoCL C API: contexts, resources, the attribute directory,
 * registered buffers and messaging between resources.
 *
 * Names and semantics follow the RoCL paper (tables 1-3); the immediate forms
 * (isend/irecv/test/wait/cancel) follow CoR. Every function is thread safe.
 *
 * Conventions (hold for every function below unless it says otherwise):
 *  - Functions returning int return ROCL_OK (0) or a value >= 0 on success
 *    and a negative ROCL_E* code on failure. rocl_strerror() names the code;
 *    rocl_last_error() gives the calling thread's last failure in words,
 *    naming the argument or gid that was wrong.
 *  - A failing call changes nothing: no buffer changes owner, no message is
 *    lost, no resource is created or deleted.
 *  - Every function except rocl_init, rocl_strerror, rocl_last_error and the
 *    attribute-list functions needs an initialised context (ROCL_ENOINIT).
 */
#ifndef ROCL_ROCL_H
#define ROCL_ROCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define ROCL_VERSION_MAJOR 0
#define ROCL_VERSION_MINOR 1
#define ROCL_VERSION_PATCH 0

/* ---- identifiers ------------------------------------------------------- */

/* A global id: unique across the whole job (all nodes). Bits 63..48 name the
 * directory server that issued it, bits 47..0 a serial; with ROCL_GID_BITS=31
 * bits 30..24 and 23..0, so that gids fit an int (rocl/rocl_paper.h). 0 is
 * never issued. */
typedef uint64_t rocl_gid_t;

#define ROCL_NULL_GID ((rocl_gid_t)0)
/* Wildcard for an origin gid or a tag in receives. Passing ROCL_ANY where a
 * rocl_gid_t is expected yields ROCL_ANY_GID. User tags are >= 0. */
#define ROCL_ANY (-1)
#define ROCL_ANY_GID ((rocl_gid_t)-1)
#define ROCL_ANY_TAG (-1)
#define ROCL_TAG_MAX 0x7fffffff

/* ---- error codes ------------------------------------------------------- */

#define ROCL_OK 0
#define ROCL_EINVAL (-1)    /* an argument is invalid (NULL, negative tag, ...) */
#define ROCL_ENOINIT (-2)   /* rocl_init() has not been called */
#define ROCL_ENOMEM (-3)    /* the buffer pool cap is reached (ROCL_POOL_MAX) */
#define ROCL_EBADBUF (-4)   /* pointer is not a live rocl buffer (or already returned) */
#define ROCL_EBUSY (-5)     /* buffer is still being sent, or resource in use */
#define ROCL_ETOOBIG (-6)   /* length exceeds the buffer or the message limit */
#define ROCL_EBADGID (-7)   /* gid is not a registered resource (of this context, where required) */
#define ROCL_ETIMEDOUT (-8) /* the timeout expired; nothing was received */
#define ROCL_ENOTFOUND (-9) /* the directory has no resource matching the query */
#define ROCL_EEND (-10)     /* a multi-answer query has no more answers */
#define ROCL_ENOSPC \
  (-11) /* an attribute list is full, or an answer does not fit the space reserved */
#define ROCL_EDELETED (-12)  /* the receiving resource was deleted while the call waited */
#define ROCL_ECANCELED (-13) /* the operation was cancelled */
#define ROCL_EALREADY (-14)  /* too late to cancel: the operation has completed */
#define ROCL_EPEER (-15)     /* the peer (context or network path) failed or is unreachable */
#define ROCL_EINTERNAL (-16) /* a bug in rocl: please report rocl_last_error() */
#define ROCL_EEXIST (-17)    /* the name (or membership) is taken already */

/* Static text for an error code ("unknown error" for anything else). */
const char *rocl_strerror(int code);

/* The calling thread's last failure as a sentence naming what was wrong, or
 * "" if none. Valid until the same thread's next rocl call. */
const char *rocl_last_error(void);

/* ---- contexts ------------------------------------------------------------ */

/* Creates this process's context (transports, buffer pool, directory access)
 * and registers it in the directory as a resource with attribute
 * type=context. Reference counted: each successful rocl_init needs one
 * rocl_exit; calls after the first only take a reference.
 * Returns the context's gid (> 0) or a negative code: ROCL_EINVAL for a bad
 * option (e.g. ROCL_TRANSPORTS naming a transport not built), ROCL_ENOMEM
 * if the pool's address space cannot be reserved. Options are read from
 * ROCL_* environment variables (see docs/options.md) when the context is
 * created. */
int64_t rocl_init(void);

/* Drops one reference; the last one deletes every resource of the context
 * (waiting receives fail with ROCL_EDELETED), frees undelivered messages and
 * tears the context down once the woken receivers have left their calls.
 * Messages this context's rocl_send already accepted (returned ROCL_OK for)
 * but its transports still hold are delivered before the last rocl_exit
 * returns: it waits until their receivers' processes have them (a large
 * message waits until a receive there takes it, or its receiver deletes the
 * destination or exits), for at most about ROCL_LINGER_MS (default 10 s, see
 * docs/options.md); what is left then is dropped with a sentence on stderr
 * naming the peer. So a process may exit right after a rocl_send.
 * Buffers the user still holds and immediate requests still pending become
 * invalid (complete or cancel requests first).
 * Returns ROCL_OK or ROCL_ENOINIT. */
int rocl_exit(void);

/* The gid of this process's context, or ROCL_NULL_GID before rocl_init. */
rocl_gid_t rocl_context_gid(void);

/* ---- attribute lists (table 2) ------------------------------------------ */

/* An attribute list: ordered (name, value) pairs in one contiguous block, so
 * that it can travel as a directory request/reply without copying. A value
 * may be left unspecified (NULL) to ask a query to fill it in. */
typedef struct rocl_attrl rocl_attrl_t;

/* New empty list whose encoded size may reach maxlen bytes (names, values
 * and 8 bytes per attribute); maxlen <= 0 picks 4096. NULL if out of memory.
 * Needs no context. */
rocl_attrl_t *rocl_new_attrl(int maxlen);

/* Appends an attribute. name: non-empty, NUL-terminated, at most 255 bytes,
 * not yet in the list. val != NULL: a value of len bytes (copied; len >= 0).
 * val == NULL: an unspecified value for which a query reserves len bytes.
 * Returns ROCL_OK, ROCL_EINVAL (bad name, duplicate, len < 0) or
 * ROCL_ENOSPC (the list would exceed maxlen). */
int rocl_add_attr(rocl_attrl_t *attrs, const char *name, const void *val, int len);

/* Pointer to the value of the named attribute inside the list (valid until
 * the list changes or is killed), its length in *len if len != NULL. NULL if
 * the attribute is absent or still unspecified. */
void *rocl_get_attr(rocl_attrl_t *attrs, const char *name, int *len);

/* Frees the list. NULL is ignored. */
void rocl_kill_attrl(rocl_attrl_t *attrs);

/* ---- resources and the directory (tables 1 and 3) ------------------------ */

/* Registers a resource described by attrs (every value specified). The
 * directory adds the attribute "context" (this context's gid, 8 bytes,
 * native byte order). The resource can receive from the moment this returns.
 * Returns its gid (> 0) or ROCL_EINVAL (NULL/unspecified value), ... */
int64_t rocl_register(rocl_attrl_t *attrs);

/* Deletes a resource of this context: it leaves the directory, receives
 * waiting on it fail with ROCL_EDELETED, undelivered messages are freed and
 * later sends to it fail with ROCL_EBADGID. Returns ROCL_OK or ROCL_EBADGID. */
int rocl_delete(rocl_gid_t gid);

/* Routes per resource (CoR's soft-ports bound to a network): the messages
 * resource gid (of this context) sends to other processes take the network
 * named `network`, one of this context's transport end-points as
 * `rocl-info` and ROCL_TRANSPORTS name them ("tcp"; "tcp.2" for the second
 * entry of ROCL_TCP_BIND=eth0,eth1; "ucx"), wherever it reaches the peer,
 * and are never striped over several (a control resource on a management
 * network while bulk data takes the fast ones). To a peer that network does
 * not reach, they take their usual route. NULL or "" undoes it; deleting
 * the resource does too. Messages sent while the route changes may take
 * either way. Returns ROCL_OK, ROCL_EBADGID (not a resource of this
 * context) or ROCL_EINVAL (no such network here; the sentence lists them). */
int rocl_route(rocl_gid_t gid, const char *network);

/* Single-answer query. If *gid != ROCL_NULL_GID the resource with that gid
 * is looked up; otherwise the first resource (lowest gid) whose attributes
 * include every specified attribute of attrs (same name, same bytes). On
 * success *gid is set and each unspecified attribute of attrs that the
 * resource has is filled in (the others stay unspecified).
 * Returns ROCL_OK, ROCL_ENOTFOUND, ROCL_ENOSPC (an answer is longer than the
 * space reserved for it; attrs is left unchanged) or ROCL_EINVAL. */
int rocl_query(rocl_gid_t *gid, rocl_attrl_t *attrs);

/* Multi-answer queries: start takes the specified attributes of attrs as the
 * pattern; next fills attrs (as rocl_query does) with the next matching
 * resource, in increasing gid order, and returns its gid; stop frees the
 * handler. Resources registered after start may or may not be seen; deleted
 * ones are skipped. start returns NULL with rocl_last_error() set on error. */
typedef struct rocl_handler rocl_handler_t;
rocl_handler_t *rocl_query_start(rocl_attrl_t *attrs);
/* Returns the gid (> 0) or ROCL_EEND, ROCL_ENOSPC, ROCL_EINVAL. */
int64_t rocl_query_next(rocl_handler_t *handler, rocl_attrl_t *attrs);
int rocl_query_stop(rocl_handler_t *handler);

/* Waits until at least `count` (>= 1) resources of the job match the
 * specified attributes of pattern (as rocl_query_start takes them), for at
 * most timeout_ms milliseconds (negative: no limit): the way to wait for
 * peers that start in any order, on any host. Returns how many matched
 * (>= count; it counts no further), or ROCL_ETIMEDOUT (the sentence says
 * how many matched), ROCL_EINVAL, ROCL_ENOINIT, ROCL_EPEER. Then
 * rocl_query / rocl_query_start give the resources. */
int rocl_query_wait(rocl_attrl_t *pattern, int count, int timeout_ms);

/* ---- threads started in other processes (ToCL 2, RoCL 5.1) ---------------- */

/* A function other processes may start here: self is the gid of the new
 * thread's own resource, arg/len a copy of the spawner's argument (valid
 * until the function returns), user what rocl_export was given. */
typedef void (*rocl_thread_fn)(rocl_gid_t self, const void *arg, size_t len, void *user);

/* Exports fn under name (1..200 bytes, not yet exported here), so that
 * rocl_spawn_thread can start it in this process. The first export starts
 * the process's launcher: a thread serving a resource {type=rocl-launcher};
 * each name is a resource {type=rocl-export, name=NAME, launcher=<gid>}.
 * rocl_exit then deletes them (no new spawns) and waits until every thread
 * spawned here has returned. Returns ROCL_OK, ROCL_EINVAL (NULL, bad or
 * exported name), ROCL_ENOINIT. */
int rocl_export(const char *name, rocl_thread_fn fn, void *user);

/* Starts the function exported as name in the process whose context gid is
 * process (ROCL_ANY_GID: any process that exports it), in a new thread
 * there, with a copy of arg's len bytes. The thread gets a resource of its
 * own, {type=rocl-thread, function=NAME}, registered before it starts and
 * deleted when the function returns. Returns that resource's gid once it
 * is registered, or ROCL_ENOTFOUND (no such process exports name: the
 * sentence names both), ROCL_ETIMEDOUT (no answer within timeout_ms;
 * negative: no limit), ROCL_EPEER (the launcher's process died before it
 * answered: within ROCL_PEER_CHECK_MS), ROCL_EINVAL, ROCL_ENOINIT, or the
 * launcher's failure with its sentence. */
int64_t rocl_spawn_thread(rocl_gid_t process, const char *name, const void *arg, size_t len,
                          int timeout_ms);

/* ---- processes started on other hosts (ToCL 2; PVM's pvm_spawn) ------------ */

/* Starts the program argv[0] (looked up in the PATH of the host's directory
 * server; a NULL-terminated argv) on a host of the job, through that host's
 * directory server, as part of the job: it gets the job's secret and
 * directory, the ROCL_* options of the caller's environment (not its rank
 * or size: a spawned process has none) and the caller's context gid as its
 * parent (rocl_parent). host: a host's name (its {type=rocl-host} resource's
 * "host" attribute: the names roclrun --hosts gave, else the system's),
 * or "any" or NULL: the hosts that take spawns in turn. Returns once the new
 * process's rocl_init has registered its context: that context's gid; or
 * ROCL_ENOTFOUND (no host of that name takes spawns; no such program there),
 * ROCL_EPEER (the host is unreachable or gone, its server refuses spawns,
 * the program exited before its rocl_init, or no directory server to
 * spawn through), ROCL_ETIMEDOUT (no context within timeout_ms, <= 0: no
 * limit; the process was killed), ROCL_EINVAL, ROCL_ENOINIT; the sentence
 * names the host and the reason. An unreachable host fails within about
 * 1 s. The process runs until it exits or the job ends (its host's server
 * stops it then); a spawned process may spawn in turn. */
int64_t rocl_spawn(const char *host, const char *const argv[], int timeout_ms);

/* As rocl_spawn, with extra environment entries for the new process: env
 * is a NULL-terminated list of "ROCL_NAME=value" (rocl's options, or a
 * layer's own ROCL_ variables, which override the caller's; other names
 * are refused with ROCL_EINVAL), or NULL. */
int64_t rocl_spawn_env(const char *host, const char *const argv[], const char *const env[],
                       int timeout_ms);

/* As rocl_spawn, on the host whose directory server issued the gid where:
 * a {type=rocl-host} resource found by query, or any resource of the job
 * (a context: next to that process); ROCL_ANY_GID: any host. */
int64_t rocl_spawn_at(rocl_gid_t where, const char *const argv[], int timeout_ms);

/* The context gid of the process that spawned this one (rocl_spawn), or
 * ROCL_NULL_GID if it was not spawned (or before rocl_init). */
rocl_gid_t rocl_parent(void);

/* ---- buffers (table 1, ToCL 4.1) ------------------------------------------ */

/* A registered buffer of at least len bytes (len may be 0) from the pool.
 * The pool uses power-of-two blocks: 2^(y-1) < len + ROCL_BUFFER_OVERHEAD
 * <= 2^y. The caller owns it until rocl_bfret, or until a send consumes it
 * (see rocl_bftoret). Never blocks. NULL with ROCL_ENOMEM in
 * rocl_last_error() when the pool cap (ROCL_POOL_MAX) would be exceeded. */
void *rocl_bfget(size_t len);
#define ROCL_BUFFER_OVERHEAD 192

/* Returns an owned buffer to the pool. ROCL_EBADBUF if ptr is not the start
 * of a rocl buffer or was already returned; ROCL_EBUSY if a send still uses
 * it (it may be returned once rocl_bfstat says SENT or FAILED). */
int rocl_bfret(void *ptr);

/* Marks an owned buffer to be returned automatically by its next send: that
 * send consumes it (the caller must not touch it afterwards) and, in the
 * same process, hands it to the receiver without copying. */
int rocl_bftoret(void *ptr);

/* Send state of an owned buffer: ROCL_BF_IDLE (never sent), ROCL_BF_PENDING
 * (a send is using it: do not write or return it), ROCL_BF_SENT,
 * ROCL_BF_FAILED; or ROCL_EBADBUF. */
int rocl_bfstat(void *ptr);
#define ROCL_BF_IDLE 0
#define ROCL_BF_PENDING 1
#define ROCL_BF_SENT 2
#define ROCL_BF_FAILED 3

/* Usable size of a buffer (>= the len asked for), or 0 if not a buffer. */
size_t rocl_bfsize(void *ptr);

/* The network of a buffer (ToCL 4.1): messages sent from rocl buffer ptr to
 * other processes take `network` ("tcp", "tcp.2", "ucx": this context's
 * end-points, as rocl_route names them) wherever it reaches the peer, never
 * striped; NULL or "" for the default (the fastest way, striped over every
 * network the peers share from ROCL_STRIPE_THRESHOLD). The choice stays
 * with the buffer until it goes back to the pool, and wins over the
 * sending resource's rocl_route. Returns ROCL_OK, ROCL_EBADBUF (not the
 * start of an owned rocl buffer) or ROCL_EINVAL (no such network here). */
int rocl_bfnet(void *ptr, const char *network);

/* ---- messages (table 1, CoR immediate forms) ------------------------------ */

/* Sends len bytes at ptr from resource ogid (of this context) to resource
 * dgid with tag (0..ROCL_TAG_MAX). ptr may be:
 *  - a rocl buffer marked with rocl_bftoret: consumed, handed over without a
 *    copy where the transport allows;
 *  - a rocl buffer not so marked: the caller keeps it; it is PENDING until
 *    the library no longer needs it, then SENT (or FAILED);
 *  - any other memory (or NULL with len 0): copied before return.
 * Messages from one origin to one destination arrive in the order sent.
 * Returns ROCL_OK once the message is accepted (delivered or queued; never
 * waits for a receive), or ROCL_EBADGID (unknown ogid/dgid), ROCL_EPEER
 * (dgid exists, but no transport enabled here reaches its context; the
 * sentence names the transports of both sides), ROCL_EINVAL,
 * ROCL_ETOOBIG (len > buffer size), ROCL_EBUSY (buffer PENDING), ROCL_ENOMEM
 * (no pool memory for the copy), ROCL_EPEER (dgid's process or the way to
 * it failed, or the directory could not say where dgid is: its server is
 * lost or dgid's server did not answer; the sentence says which). On
 * failure a bftoret buffer stays owned. */
int rocl_send(rocl_gid_t ogid, rocl_gid_t dgid, int tag, void *ptr, size_t len);

/* Receives on resource dgid (of this context) the oldest message whose
 * origin is ogid and tag is tag (either may be ROCL_ANY). On success *ptr
 * is a rocl buffer now owned by the caller (rocl_bfret it or send it on) and
 * *aogid, *atag, *alen (each may be NULL) describe the message.
 * timeout < 0 blocks until a message arrives, 0 only polls, > 0 waits at
 * most that many milliseconds. A waiting receiver spins for ROCL_SPIN_US
 * microseconds before it sleeps. Returns ROCL_OK, ROCL_ETIMEDOUT,
 * ROCL_EBADGID, ROCL_EINVAL, ROCL_EDELETED, ROCL_EPEER (ogid's process
 * exited or died, ROCL_PEER_CHECK_MS; or this process lost its directory
 * server, so that nothing can tell any more) or ROCL_ENOMEM (a large
 * message sent by rendezvous matched, but the buffer pool has no room for
 * it: it stays queued in its place, to be received once buffers are
 * returned). */
int rocl_recv(rocl_gid_t dgid, rocl_gid_t ogid, int tag, void **ptr, rocl_gid_t *aogid, int *atag,
              size_t *alen, int timeout);

/* Handle of an immediate operation; ROCL_REQUEST_NULL once completed. */
typedef struct rocl_request *rocl_request_t;
#define ROCL_REQUEST_NULL ((rocl_request_t)0)

/* What a completed operation produced. For receives: the buffer (owned by
 * the caller), origin, tag and length. For sends: origin = dgid, tag, len. */
typedef struct rocl_status {
  void *ptr;
  rocl_gid_t origin;
  int tag;
  int error;      /* ROCL_OK or why the operation failed */
  size_t len;     /* the message's length (also when it was cut to fit, see rocl_recvx) */
  unsigned flags; /* the sender's message flags (rocl_sendx), 0 otherwise */
} rocl_status_t;

/* Starts a send with the same buffer rules as rocl_send and sets *req.
 * Returns ROCL_OK or the codes of rocl_send (then *req is untouched). */
int rocl_isend(rocl_gid_t ogid, rocl_gid_t dgid, int tag, void *ptr, size_t len,
               rocl_request_t *req);

/* Posts a receive that rocl_test/rocl_wait complete. Receives posted on one
 * resource are matched in the order posted, interleaved correctly with
 * blocking receives. */
int rocl_irecv(rocl_gid_t dgid, rocl_gid_t ogid, int tag, rocl_request_t *req);

/* Checks *req without blocking. Sets *done to 1 and, on completion, frees the
 * request, sets *req = ROCL_REQUEST_NULL and fills *status (may be NULL; a
 * received buffer is then still the caller's to return: use status).
 * Returns ROCL_OK, ROCL_EINVAL, or the failed operation's error code.
 * A NULL request completes at once with an empty status. */
int rocl_test(rocl_request_t *req, int *done, rocl_status_t *status);

/* Waits for *req like rocl_recv's timeout (< 0 forever, 0 poll, > 0 ms).
 * On ROCL_ETIMEDOUT the request stays live. */
int rocl_wait(rocl_request_t *req, rocl_status_t *status, int timeout);

/* Cancels a pending receive: ROCL_OK (request freed, *req = NULL, nothing
 * received), or ROCL_EALREADY if it already completed (test/wait it). */
int rocl_cancel(rocl_request_t *req);

/* ---- domains, flags, receives into memory, probes (for layers: MPI, ...) -- */

/* A domain is a message context (CoR domains, MPI communicators): a message
 * sent in one domain is received only by receives in that domain; domain 0
 * is the one rocl_send/rocl_recv use. Message flags are 8 bits the sender
 * attaches and the receiver reads in rocl_status_t.flags; they play no part
 * in matching (a layer marks, say, "acknowledge this message"). */
#define ROCL_DOMAIN_MAX 0x00ffffffu
#define ROCL_FLAGS_MAX 0xffu

/* Message flag: acknowledge the match (synchronous sends). When a receive
 * matches a message sent with ROCL_FLAG_ACK, rocl sends the origin an empty
 * message from the receiving resource, with the message's tag, in domain
 * (domain | ROCL_ACK_DOMAIN): the sender waits for it with rocl_recvx.
 * Sent once per message, whoever matched it (a blocking or immediate
 * receive, on whichever thread) and whether or not anyone waits for the
 * receive afterwards. Domains with ROCL_ACK_DOMAIN set are for these
 * acknowledgements only. The receiver's status does not show the flag. */
#define ROCL_FLAG_ACK 0x80u
#define ROCL_ACK_DOMAIN 0x00800000u

/* rocl_send in `domain` (0..ROCL_DOMAIN_MAX) with `flags` (0..ROCL_FLAGS_MAX);
 * everything else as rocl_send. */
int rocl_sendx(rocl_gid_t ogid, rocl_gid_t dgid, int tag, uint32_t domain, unsigned flags,
               void *ptr, size_t len);
int rocl_isendx(rocl_gid_t ogid, rocl_gid_t dgid, int tag, uint32_t domain, unsigned flags,
                void *ptr, size_t len, rocl_request_t *req);

/* rocl_isendx that may lend ptr instead of copying it (MPI_Isend's
 * semantics): where the message has at least ROCL_LEND_THRESHOLD bytes, ptr
 * is plain memory (not a rocl buffer) and the way to dgid can send from it
 * (shm: the receiver copies the bytes straight from ptr, with cross-memory
 * attach, when a receive matches, and a thread of ours that waits for the
 * send meanwhile writes the second half into the receive's memory; tcp:
 * they are written into the socket from ptr), *req is a request that
 * completes only after that: ptr must stay allocated and unchanged until
 * rocl_test/rocl_wait report completion (ROCL_EPEER if the
 * receiver's process died before taking the bytes). Otherwise the bytes
 * are copied before it returns, as rocl_sendx does, and *req is
 * ROCL_REQUEST_NULL (nothing to wait for; a copied send makes no request).
 * A lent send cannot be cancelled. */
int rocl_isendx_lend(rocl_gid_t ogid, rocl_gid_t dgid, int tag, uint32_t domain, unsigned flags,
                     void *ptr, size_t len, rocl_request_t *req);

/* rocl_recv in `domain`, reporting in *status (not NULL). With into == NULL
 * the message's buffer is handed over as rocl_recv does (status->ptr). With
 * into != NULL the payload is copied there, at most cap bytes, and its
 * buffer goes back to the pool: status->ptr = into, status->len = the
 * message's full length, so len > cap tells that it was cut. */
int rocl_recvx(rocl_gid_t dgid, rocl_gid_t ogid, int tag, uint32_t domain, void *into, size_t cap,
               rocl_status_t *status, int timeout);
/* rocl_irecv in `domain`, copying into (into, cap) on completion as
 * rocl_recvx does (into == NULL: the buffer is handed over). */
int rocl_irecvx(rocl_gid_t dgid, rocl_gid_t ogid, int tag, uint32_t domain, void *into, size_t cap,
                rocl_request_t *req);

/* Looks for a message on dgid that rocl_recvx(dgid, ogid, tag, domain) would
 * receive, without receiving it: fills *status (origin, tag, len, flags;
 * ptr NULL). timeout as rocl_recv's (< 0 waits until one arrives, 0 looks
 * once). Returns ROCL_OK, ROCL_ETIMEDOUT, ROCL_EBADGID, ROCL_EINVAL or
 * ROCL_EDELETED. */
int rocl_probe(rocl_gid_t dgid, rocl_gid_t ogid, int tag, uint32_t domain, rocl_status_t *status,
               int timeout);

/* ---- CoR domains (the CoR paper, sections 2.1, 3.1 and 4.1) ----------------- */

/* A CoR domain is a resource (it has a gid, it is in the directory as
 * {type=rocl-domain, rocl.context, rocl.parent[, rocl.name]}) that bundles
 * a message context and an ordered, named group of resources: its members.
 * Domains form a tree (each may have a parent domain); a member has an
 * index (0, 1, 2, ...) and optionally a local name, both unique within the
 * domain and valid only there. Messages between members travel in the
 * domain's context, a numeric domain of the range below that no other
 * domain of the job holds: a message sent in one domain is received only
 * in that domain (never by rocl_recv, nor in another domain).
 *
 * Numeric domains (the `domain` of rocl_sendx and friends) are shared out
 * so: 0 is rocl_send's; below ROCL_COR_CONTEXT_FIRST the layers' own (MPI,
 * NCS and PVM's contexts and system domains); ROCL_COR_CONTEXT_FIRST..
 * ROCL_COR_CONTEXT_LAST the contexts of CoR domains, handed out by
 * rocl_domain_create only; ROCL_ACK_DOMAIN and up acknowledgements. */
#define ROCL_COR_CONTEXT_FIRST 0x00500000u
#define ROCL_COR_CONTEXT_LAST 0x007fffffu
/* "Any member" for rocl_drecv's from_index, and the index it reports for a
 * sender that is no member of the domain. */
#define ROCL_ANY_INDEX (-1)

/* Creates a domain under parent (ROCL_NULL_GID: at the top of the tree)
 * named name (at most 200 bytes; NULL or "": unnamed, known by gid only),
 * a resource of this context, and claims its message context. Sets
 * *domain. Blocks on directory round trips. Returns ROCL_OK, ROCL_EEXIST
 * (parent has a domain of that name: the sentence names both),
 * ROCL_EBADGID (parent is not a domain), ROCL_ENOSPC (every context of the
 * range is taken), ROCL_EINVAL. The domain lives until rocl_domain_delete
 * or until its creator's context ends. */
int rocl_domain_create(rocl_gid_t parent, const char *name, rocl_gid_t *domain);

/* Finds the domain named name under parent (ROCL_NULL_GID: top level),
 * created by any process of the job, on any host. Waits up to timeout_ms
 * for it to appear (0: looks once; negative: no limit). Returns ROCL_OK,
 * ROCL_ENOTFOUND, ROCL_EINVAL (NULL or empty name). */
int rocl_domain_find(const char *name, rocl_gid_t parent, int timeout_ms, rocl_gid_t *domain);

/* Deletes a domain this context created: its entry leaves the directory,
 * this process's memberships of it go, its soft-port here is undone.
 * Members joined by other processes keep their entries until they leave
 * (or exit); every call on the deleted domain fails with ROCL_EBADGID.
 * Returns ROCL_OK, ROCL_EBADGID (not a domain, or created by another
 * context), ROCL_EBUSY (it has a subdomain: delete that first). */
int rocl_domain_delete(rocl_gid_t domain);

/* The domain's message context (ROCL_COR_CONTEXT_FIRST..LAST): rocl_sendx,
 * rocl_recvx, rocl_probe and the immediate forms with that domain number
 * and universal gids are the paper's alternative to the calls below with
 * local identifiers. Returns ROCL_OK, ROCL_EBADGID, ROCL_EINVAL. */
int rocl_domain_context(rocl_gid_t domain, uint32_t *context);

/* Makes member (a resource of this context) a member of domain: it gets
 * the lowest index no member holds (indices are unique across the job's
 * processes and hosts, also when many join at once; they are dense while
 * nobody leaves) in *index (may be NULL), and local_name (at most 200
 * bytes; NULL or "": none) if no other member of the domain holds it.
 * Blocks on directory round trips (a few more when joins race). Returns
 * ROCL_OK, ROCL_EEXIST (local_name is taken in the domain, or member is a
 * member already: the sentence says which), ROCL_EBADGID (domain is not a
 * domain, member is not a resource of this context), ROCL_EINVAL. Leave
 * before deleting the member's resource; a process's exit takes its
 * memberships away. */
int rocl_domain_join(rocl_gid_t domain, rocl_gid_t member, const char *local_name, int *index);

/* Takes member out of domain (joined through this process): its index and
 * local name are free again. Returns ROCL_OK, ROCL_ENOTFOUND. */
int rocl_domain_leave(rocl_gid_t domain, rocl_gid_t member);

/* The member of domain named local_name (in that domain only: the same
 * name in another domain is another member), a member's index, the member
 * at an index, and the number of members (counted afresh). What
 * rocl_domain_member and rocl_domain_index find is kept by this process
 * until something leaves the directory anywhere in the job (a member's
 * index changes only when it leaves), so that rocl_dsend and rocl_drecv
 * do not ask the directory per message. Return ROCL_OK, ROCL_ENOTFOUND
 * (no such member: the sentence names the name, index or gid and the
 * domain), ROCL_EBADGID (domain is not a domain), ROCL_EINVAL. */
int rocl_domain_lookup(rocl_gid_t domain, const char *local_name, rocl_gid_t *member);
int rocl_domain_member(rocl_gid_t domain, int index, rocl_gid_t *member);
int rocl_domain_index(rocl_gid_t domain, rocl_gid_t member, int *index);
int rocl_domain_size(rocl_gid_t domain, int *size);

/* A soft-port (CoR 4.1): what this process sends in domain with rocl_dsend
 * and rocl_dcast takes `network` (one of this context's networks, as
 * rocl_route names them: "tcp", "tcp.2", "ucx") wherever it reaches the
 * peer, never striped. NULL or "" undoes it. A rocl buffer handed over
 * with rocl_bftoret is sent as it is, marked as rocl_bfnet would (unless it
 * has a network of its own); any other memory is copied into a buffer so
 * marked. Returns ROCL_OK, ROCL_EBADGID (not a domain), ROCL_EINVAL (no
 * such network here; the sentence lists those there are). */
int rocl_domain_port(rocl_gid_t domain, const char *network);

/* Sends len bytes at ptr from resource from (of this context) to the
 * member at to_index, in the domain's context, with tag; ptr's rules and
 * the return codes are rocl_send's, plus ROCL_ENOTFOUND (no member has
 * to_index) and ROCL_EBADGID (domain is not a domain). */
int rocl_dsend(rocl_gid_t domain, rocl_gid_t from, int to_index, int tag, void *ptr, size_t len);

/* Receives on resource me (of this context) the oldest message sent in the
 * domain's context by the member at from_index (ROCL_ANY_INDEX: by anyone)
 * with tag (ROCL_ANY_TAG: any): rocl_recv's rules for *ptr, the timeout
 * and the codes, plus ROCL_ENOTFOUND (no member has from_index).
 * *afrom_index (may be NULL) is the sender's index, ROCL_ANY_INDEX if the
 * sender is no member (any resource may send in the context with
 * rocl_sendx) or left since. */
int rocl_drecv(rocl_gid_t domain, rocl_gid_t me, int from_index, int tag, void **ptr,
               int *afrom_index, int *atag, size_t *alen, int timeout);

/* Sends a copy of len bytes at ptr from resource from to every member of
 * the domain but from itself, once each, in the domain's context (a
 * buffer marked with rocl_bftoret is returned to the pool once every copy
 * is sent). Returns how many members it reached (>= 0), or rocl_send's
 * codes when a send fails (the sentence names the member's index and how
 * many had the message before it). */
int rocl_dcast(rocl_gid_t domain, rocl_gid_t from, int tag, void *ptr, size_t len);

/* ---- introspection ---------------------------------------------------------- */

typedef struct rocl_pool_stats {
  size_t cap_bytes;      /* ROCL_POOL_MAX */
  size_t reserved_bytes; /* carved from the pool region (<= cap) */
  size_t in_use_bytes;   /* blocks owned by users or in flight */
  size_t in_use_buffers;
} rocl_pool_stats_t;
int rocl_pool_stats(rocl_pool_stats_t *out);

/* Prints every option (name, value in force, default, doc) to the stream
 * (a FILE*); works without a context. */
void rocl_print_options(void *file);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* ROCL_ROCL_H */
