/* pvm3.h - rocl's PVM: the PVM 3.4 C interface (docs/pvm.md), a translation
 * onto the rocl C API with no pvmd. Function signatures and constant values
 * are those of PVM 3.4.6, so programs written for PVM build unchanged; the
 * calls rocl does not provide are declared and return PvmNotImpl.
 *
 * Contracts shared by every call (PVM's own, unless docs/pvm.md says
 * otherwise):
 *  - Calls return a value >= 0 on success and a negative Pvm* code on
 *    failure; the code is also left in pvm_errno, and pvm_perror prints it.
 *  - The first call enrols the process as a task (pvm_mytid); a process
 *    started by pvm_spawn is enrolled before its main runs.
 *  - Task ids (tids) are the rocl gids of the tasks' resources, folded into
 *    an int where gids are wider than 31 bits (docs/pvm.md, "Task ids").
 *  - Every call is thread safe. Threads of one task share its active send
 *    and receive buffers, as in PVM; a blocking receive does not hold up
 *    the other threads' calls.
 *  - Blocking calls (pvm_recv, pvm_precv, pvm_barrier, pvm_reduce at the
 *    root) wait without limit; pvm_trecv waits at most its timeout. */
#ifndef _PVM3_H_
#define _PVM3_H_

#include <stdio.h>
#include <sys/time.h>

#define PVM_VER "3.4.6"
#define PVM_MAJOR_VERSION 3
#define PVM_MINOR_VERSION 4
#define PVM_PATCH_VERSION 6

/* Data packing styles for pvm_initsend and pvm_mkbuf. */
#define PvmDataDefault 0 /* portable encoding (native on a rocl job, see docs) */
#define PvmDataRaw 1     /* native bytes */
#define PvmDataInPlace 2 /* bytes read from the caller's memory at send time */
#define PvmDataFoo PvmDataDefault
#define PvmDataTrace 4

/* pvm_spawn flags. */
#define PvmTaskDefault 0
#define PvmTaskHost 1  /* `where` names a host */
#define PvmTaskArch 2  /* `where` names an architecture */
#define PvmTaskDebug 4 /* (accepted, ignored) */
#define PvmTaskTrace 8 /* (accepted, ignored) */
#define PvmMppFront 16
#define PvmHostCompl 32
#define PvmNoSpawnParent 64

/* pvm_notify kinds. */
#define PvmTaskExit 1
#define PvmHostDelete 2
#define PvmHostAdd 3
#define PvmRouteAdd 4
#define PvmRouteDelete 5
#define PvmNotifyCancel 256

/* pvm_setopt / pvm_getopt options and values. */
#define PvmRoute 1
#define PvmDontRoute 1
#define PvmAllowDirect 2
#define PvmRouteDirect 3
#define PvmDebugMask 2
#define PvmAutoErr 3
#define PvmOutputTid 4
#define PvmOutputCode 5
#define PvmTraceTid 6
#define PvmTraceCode 7
#define PvmTraceBuffer 8
#define PvmTraceOptions 9
#define PvmTraceFull 1
#define PvmTraceTime 2
#define PvmTraceCount 3
#define PvmFragSize 10
#define PvmResvTids 11
#define PvmSelfOutputTid 12
#define PvmSelfOutputCode 13
#define PvmSelfTraceTid 14
#define PvmSelfTraceCode 15
#define PvmSelfTraceBuffer 16
#define PvmSelfTraceOptions 17
#define PvmShowTids 18
#define PvmPollType 19
#define PvmPollConstant 1
#define PvmPollSleep 2
#define PvmPollTime 20
#define PvmOutputContext 21
#define PvmTraceContext 22
#define PvmSelfOutputContext 23
#define PvmSelfTraceContext 24
#define PvmNoReset 25

/* pvm_getopt/pvm_setopt "which" of PVM 3.3 (kept for old programs). */
#define PvmTaskSelf 0
#define PvmTaskChild 1

#define PvmBaseContext 0

/* Message box flags (pvm_putinfo). */
#define PvmMboxDefault 0
#define PvmMboxPersistent 1
#define PvmMboxMultiInstance 2
#define PvmMboxOverWritable 4
#define PvmMboxFirstAvail 8
#define PvmMboxReadAndDelete 16
#define PvmMboxWaitForInfo 32
#define PvmMboxMaxFlag 512
#define PvmMboxDirectIndexShift 10
#define PvmMboxMaxDirectIndex ((1 << (31 - PvmMboxDirectIndexShift)) - 1)
#define PvmMboxDirectIndexOf(_flags) (((_flags) >> PvmMboxDirectIndexShift) & PvmMboxMaxDirectIndex)
#define PvmMboxDirectIndex(_index) (((_index)&PvmMboxMaxDirectIndex) << PvmMboxDirectIndexShift)

#define PVMNORESETCLASS "###_PVM_NO_RESET_###"
#define PVMHOSTERCLASS "###_PVM_HOSTER_###"
#define PVMTASKERCLASS "###_PVM_TASKER_###"
#define PVMTRACERCLASS "###_PVM_TRACER_###"
#define PVMRMCLASS "###_PVM_RM_###"

/* Error codes. */
#define PvmOk 0
#define PvmBadParam -2
#define PvmMismatch -3
#define PvmOverflow -4
#define PvmNoData -5
#define PvmNoHost -6
#define PvmNoFile -7
#define PvmDenied -8
#define PvmNoMem -10
#define PvmBadMsg -12
#define PvmSysErr -14
#define PvmNoBuf -15
#define PvmNoSuchBuf -16
#define PvmNullGroup -17
#define PvmDupGroup -18
#define PvmNoGroup -19
#define PvmNotInGroup -20
#define PvmNoInst -21
#define PvmHostFail -22
#define PvmNoParent -23
#define PvmNotImpl -24
#define PvmDSysErr -25
#define PvmBadVersion -26
#define PvmOutOfRes -27
#define PvmDupHost -28
#define PvmCantStart -29
#define PvmAlready -30
#define PvmNoTask -31
#define PvmNotFound -32
#define PvmExists -33
#define PvmHostrNMstr -34
#define PvmParentNotSet -35
#define PvmIPLoopback -36
#define PvmNoEntry PvmNotFound
#define PvmDupEntry PvmDenied

/* Data types for pvm_psend, pvm_precv, pvm_reduce, pvm_gather. */
#define PVM_STR 0
#define PVM_BYTE 1
#define PVM_SHORT 2
#define PVM_INT 3
#define PVM_FLOAT 4
#define PVM_CPLX 5
#define PVM_DOUBLE 6
#define PVM_DCPLX 7
#define PVM_LONG 8
#define PVM_USHORT 9
#define PVM_UINT 10
#define PVM_ULONG 11

/* pvm_config: one per host of the job (rocl's {type=rocl-host} resources). */
struct pvmhostinfo {
  int hi_tid;    /* the host's id */
  char *hi_name; /* host name */
  char *hi_arch; /* architecture (PVM's name for this machine's) */
  int hi_speed;  /* relative speed (1000) */
  int hi_dsig;   /* data signature */
};

/* pvm_tasks: one per enrolled task. */
struct pvmtaskinfo {
  int ti_tid;     /* task id */
  int ti_ptid;    /* parent's tid, 0 if none */
  int ti_host;    /* the host's id (pvmhostinfo.hi_tid) */
  int ti_flag;    /* status flags */
  char *ti_a_out; /* program name */
  int ti_pid;     /* process id */
};

/* pvm_getminfo / pvm_setminfo. */
struct pvmminfo {
  int len;
  int ctx;
  int tag;
  int wid;
  int enc;
  int crc;
  int src;
  int dst;
};

/* pvm_getmboxinfo. */
struct pvmmboxinfo {
  char *mi_name;
  int mi_nentries;
  int *mi_indices;
  int *mi_owners;
  int *mi_flags;
};

#define PVMTMPNAMLEN 128

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* The code of the calling thread's last failed call (PvmOk if none). */
extern int pvm_errno;
/* Text of each code, indexed by -code (pvm_nerr entries). */
extern char *pvm_errlist[];
extern int pvm_nerr;

/* Task identity and life. */
int pvm_mytid(void);
int pvm_parent(void);
int pvm_exit(void);
int pvm_spawn(char *task, char **argv, int flag, char *where, int ntask, int *tids);
int pvm_kill(int tid);
int pvm_siblings(int **tids);
int pvm_config(int *nhost, int *narch, struct pvmhostinfo **hostp);
int pvm_tasks(int where, int *ntask, struct pvmtaskinfo **taskp);
int pvm_tidtohost(int tid);
int pvm_pstat(int tid);
int pvm_mstat(char *host);
int pvm_notify(int what, int msgtag, int cnt, int *tids);
int pvm_catchout(FILE *ff);
int pvm_setopt(int what, int val);
int pvm_getopt(int what);
char *pvm_version(void);
int pvm_archcode(char *arch);
int pvm_addhosts(char **hosts, int nhost, int *infos);
int pvm_delhosts(char **hosts, int nhost, int *infos);
int pvm_halt(void);
int pvm_start_pvmd(int argc, char **argv, int block);
int pvm_sendsig(int tid, int signum);
int pvm_getfds(int **fds);

/* Errors. */
int pvm_perror(char *msg);
char *pvm_strerror(void);

/* Contexts (rocl domains). */
int pvm_newcontext(void);
int pvm_setcontext(int ctx);
int pvm_getcontext(void);
int pvm_freecontext(int ctx);

/* Message buffers. */
int pvm_initsend(int encoding);
int pvm_mkbuf(int encoding);
int pvm_freebuf(int bufid);
int pvm_getsbuf(void);
int pvm_getrbuf(void);
int pvm_setsbuf(int bufid);
int pvm_setrbuf(int bufid);
int pvm_bufinfo(int bufid, int *bytes, int *msgtag, int *tid);
int pvm_getminfo(int bufid, struct pvmminfo *info);
int pvm_setminfo(int bufid, struct pvmminfo *info);
int pvm_pkmesg(int bufid);
int pvm_pkmesgbody(int bufid);
int pvm_upkmesg(void);

/* Packing into the active send buffer. */
int pvm_pkbyte(char *cp, int cnt, int std);
int pvm_pkcplx(float *xp, int cnt, int std);
int pvm_pkdcplx(double *zp, int cnt, int std);
int pvm_pkdouble(double *dp, int cnt, int std);
int pvm_pkfloat(float *fp, int cnt, int std);
int pvm_pkint(int *np, int cnt, int std);
int pvm_pklong(long *np, int cnt, int std);
int pvm_pkshort(short *np, int cnt, int std);
int pvm_pkstr(char *cp);
int pvm_pkuint(unsigned int *np, int cnt, int std);
int pvm_pkulong(unsigned long *np, int cnt, int std);
int pvm_pkushort(unsigned short *np, int cnt, int std);
int pvm_packf(const char *fmt, ...);

/* Unpacking from the active receive buffer. */
int pvm_upkbyte(char *cp, int cnt, int std);
int pvm_upkcplx(float *xp, int cnt, int std);
int pvm_upkdcplx(double *zp, int cnt, int std);
int pvm_upkdouble(double *dp, int cnt, int std);
int pvm_upkfloat(float *fp, int cnt, int std);
int pvm_upkint(int *np, int cnt, int std);
int pvm_upklong(long *np, int cnt, int std);
int pvm_upkshort(short *np, int cnt, int std);
int pvm_upkstr(char *cp);
int pvm_upkuint(unsigned int *np, int cnt, int std);
int pvm_upkulong(unsigned long *np, int cnt, int std);
int pvm_upkushort(unsigned short *np, int cnt, int std);
int pvm_unpackf(const char *fmt, ...);

/* Point to point. */
int pvm_send(int tid, int msgtag);
int pvm_mcast(int *tids, int ntask, int msgtag);
int pvm_psend(int tid, int msgtag, void *buf, int len, int datatype);
int pvm_recv(int tid, int msgtag);
int pvm_nrecv(int tid, int msgtag);
int pvm_trecv(int tid, int msgtag, struct timeval *tmout);
int pvm_probe(int tid, int msgtag);
int pvm_precv(int tid, int msgtag, void *buf, int len, int datatype, int *rtid, int *rtag,
              int *rlen);
int (*pvm_recvf(int (*new_match)(int, int, int)))(int, int, int);
int pvm_addmhf(int src, int tag, int ctx, int (*handler)(int));
int pvm_delmhf(int mhid);

/* Groups. */
int pvm_joingroup(char *group);
int pvm_lvgroup(char *group);
int pvm_gettid(char *group, int inst);
int pvm_getinst(char *group, int tid);
int pvm_gsize(char *group);
int pvm_freezegroup(char *group, int size);
int pvm_barrier(char *group, int count);
int pvm_bcast(char *group, int msgtag);
int pvm_reduce(void (*func)(int *, void *, void *, int *, int *), void *data, int count,
               int datatype, int msgtag, char *group, int rootginst);
int pvm_gather(void *result, void *data, int count, int datatype, int msgtag, char *group,
               int rootginst);
int pvm_scatter(void *result, void *data, int count, int datatype, int msgtag, char *group,
                int rootginst);

/* Predefined pvm_reduce functions. */
void PvmMax(int *datatype, void *x, void *y, int *num, int *info);
void PvmMin(int *datatype, void *x, void *y, int *num, int *info);
void PvmSum(int *datatype, void *x, void *y, int *num, int *info);
void PvmProduct(int *datatype, void *x, void *y, int *num, int *info);

/* Message boxes (a shared name space of messages). */
int pvm_putinfo(char *name, int bufid, int flags);
int pvm_recvinfo(char *name, int index, int flags);
int pvm_delinfo(char *name, int index, int flags);
int pvm_getmboxinfo(char *pattern, int *nclasses, struct pvmmboxinfo **classes);
int pvm_insert(char *name, int req, int data);
int pvm_lookup(char *name, int req, int *datap);
int pvm_delete(char *name, int req);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* _PVM3_H_ */
