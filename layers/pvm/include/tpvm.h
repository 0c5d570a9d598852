/* tpvm.h - TPVM over rocl (docs/pvm.md, "TPVM"): threads as PVM tasks. A
 * task exports a thread function under a name; any task may start that
 * function as a new thread in a process that exports it. The thread is a
 * task of its own: pvm_mytid gives its tid, pvm_parent its spawner's, and
 * it sends and receives with the PVM calls, exactly as a process does.
 * Include pvm3.h first or not at all: this header includes it. */
#ifndef ROCL_TPVM_H
#define ROCL_TPVM_H

#include "pvm3.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* A thread's body. It runs as a task of its own until it returns (or
 * calls pvm_exit, which ends the thread's task, not the process). */
typedef void (*tpvm_function)(void);

/* Exports fn under name (1..200 bytes, not yet exported by this process),
 * enrolling the process if needed: the process's launcher (rocl's pod
 * controller, {type=rocl-launcher}) will start it for tpvm_spawn. Returns
 * PvmOk, PvmBadParam (NULL, empty or exported name) or PvmSysErr. */
int tpvm_export(char *name, tpvm_function fn);

/* Starts count threads running the function exported as name: in any
 * process that exports it, or, with flag PvmTaskHost, in one on the host
 * `where` names. Each new thread's tid goes to tids[i]; a failure leaves
 * its code there (PvmNoFile: nobody exports name; PvmNoHost: nobody on
 * that host; PvmCantStart). Returns how many started, or PvmBadParam.
 * Blocks until every thread is registered (not until it runs). */
int tpvm_spawn(char *name, char *where, int flag, int count, int *tids);

/* The same as pvm_mytid and pvm_parent, under TPVM's names. */
int tpvm_mytid(void);
int tpvm_parent(void);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* ROCL_TPVM_H */
