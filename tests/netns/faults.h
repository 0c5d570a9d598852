/* faults.h - what the parts of the faults program (faults.c, the modes
 * about processes, hosts and links; faults_memory.c, those about memory;
 * faults_stream.c; faults_util.c) share. Every function that checks
 * something ends the process with a sentence naming what failed (die). */
#pragma once
#include <pthread.h>
#include <rocl/rocl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum {
  kTagData = 1,      /* a message of a stream */
  kTagEnd = 2,       /* a stream's end: count and first failed sequence number */
  kTagHello = 3,     /* rocld: rank 2 to rank 3 and back */
  kTagAck = 4,       /* big: the receiver has the whole message */
  kRecvMs = 30000,   /* a receive that waits longer counts as a hang */
  kFindMs = 30000,   /* how long to wait for a peer's resource */
  kMarkMs = 120000,  /* how long to wait for the script's marks */
  kStreamLen = 1024, /* bytes of a stream's message */
  kStreamGapUs = 200 /* between a stream's messages */
};

#define MIB ((size_t)1 << 20)
#define NO_SEQ UINT32_MAX

extern const char *g_mode; /* the mode, for sentences */
extern int g_rank;         /* ROCL_RANK */
extern long g_slack_ms;    /* FAULTS_SLACK_MS: added to every documented bound */
extern long g_check_ms;    /* ROCL_PEER_CHECK_MS */

/* ---- faults_util.c ---------------------------------------------------------- */

/* "faults MODE rank R: FAILED: <sentence>" on stderr, then _exit(1): other
 * threads may be inside rocl calls, so no exit handlers run. */
__attribute__((noreturn, format(printf, 1, 2))) void die(const char *format, ...);
/* "faults MODE rank R: <sentence>" on stdout, for the script and the log. */
__attribute__((format(printf, 1, 2))) void say(const char *format, ...);
/* Dies unless rc is ROCL_OK, naming what and rocl's sentence. */
void check(int rc, const char *what);
/* The wall clock in ms: the clock of the script's marks. */
double now_ms(void);
void sleep_ms(long ms);
long env_long(const char *name, long fallback);

/* The moment the script wrote into $FAULTS_DIR/name, waiting for it. */
double mark_ms(const char *name);
int has_mark(const char *name);
/* Writes $FAULTS_DIR/name now, for the other ranks. */
void write_mark(const char *name);

/* Resident memory in KiB (VmRSS). */
long rss_kib(void);
size_t pool_in_use(void);
/* Waits up to 2 s for the pool's bytes in use to be back at base. */
void pool_back(size_t base, const char *after);

/* {type=faults, rank}: registered here, or looked up (ROCL_OK or the code,
 * the sentence in why), or waited for (up to kFindMs). */
rocl_gid_t register_rank(int rank);
int look_up(int rank, rocl_gid_t *gid, char *why, size_t cap);
rocl_gid_t find_rank(int rank);

/* Checks that a failure came as `want` (or `also`, when not 0), within
 * bound_ms of `since`, naming `gid` (when not 0; a failure from the
 * transport may name the peer's address instead) and, when not NULL,
 * `word`; says what came and "detected in N ms". */
void expect_failure(const char *what, int rc, const char *sentence, double at, double since,
                    int want, int also, rocl_gid_t gid, const char *word, double bound_ms);

/* ---- faults_stream.c ---------------------------------------------------------- */

/* What one process sends to one peer and receives from it, each direction
 * in a thread of its own. The receiver checks order and content, and
 * counts gaps (messages missing before a later one). */
typedef struct {
  rocl_gid_t me, peer;
  int peer_rank;
  long retry_ms; /* > 0: a failed send is retried (the same message) this long */
  atomic_int stop;
  pthread_t sender, receiver;
  /* sender */
  atomic_uint sent; /* sends that returned ROCL_OK */
  atomic_int send_done;
  int send_rc;           /* the first failure's code */
  double send_failed_at; /* and its moment */
  char send_error[512];
  uint32_t first_failed; /* its sequence number (NO_SEQ: none) */
  double send_back_at;   /* the first send that went after it */
  /* receiver */
  atomic_uint received;
  atomic_int recv_done;
  int recv_rc;
  double recv_failed_at;
  char recv_error[512];
  uint32_t expect, gaps, lost, gap_end;
  double last_at, pause_ms, pause_end_at; /* the longest time without a message */
  int ended;                              /* the end message came and matched */
} Stream;

/* Starts s's two threads: me sends to and receives from peer. */
void stream_start(Stream *s, rocl_gid_t me, rocl_gid_t peer, int peer_rank, long retry_ms);
/* Waits until every stream of s[count] has received at least n messages. */
void streams_flowing(Stream *s, int count, unsigned n);
/* Stops a healthy stream: its end goes out, the peer's end comes in. */
void stream_finish(Stream *s);
/* Waits (up to limit_ms) until both of s's threads have stopped on an error. */
void stream_broken(Stream *s, double limit_ms);

/* ---- the modes ------------------------------------------------------------------ */

int run_stall(void); /* faults_memory.c */
int run_big(void);
