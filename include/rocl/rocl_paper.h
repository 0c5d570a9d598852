/* rocl_paper.h - the RoCL paper's API with its own types: gids are `int`,
 * lengths `int` (tables 1 and 3 of the paper). A program written to the
 * paper includes this header instead of rocl.h and runs unchanged, in a job
 * whose directory servers issue gids that fit an int: ROCL_GID_BITS=31
 * (roclrun passes it to every server and process of the job; rocld
 * --gid-bits 31). Under 63-bit gids, a call that would have to hand out a
 * gid too wide for an int fails with ROCL_EINVAL and a sentence saying
 * so: never a silently truncated gid.
 *
 * The paper's names map onto the functions below (macros); every other
 * function is rocl.h's. ROCL_ANY (-1) is the wildcard origin and tag. */
#ifndef ROCL_ROCL_PAPER_H
#define ROCL_ROCL_PAPER_H

#include <rocl/rocl.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

/* rocl_register: the new gid (> 0), or a negative code. */
int rocl_paper_register(rocl_attrl_t *attrs);
int rocl_paper_delete(int gid);
/* rocl_query: *gid in and out as rocl_query's. */
int rocl_paper_query(int *gid, rocl_attrl_t *attrs);
/* rocl_query_next: the next gid (> 0), ROCL_EEND or a negative code. */
int rocl_paper_query_next(rocl_handler_t *handler, rocl_attrl_t *attrs);
int rocl_paper_send(int ogid, int dgid, int tag, void *ptr, int len);
int rocl_paper_recv(int dgid, int ogid, int tag, void **ptr, int *aogid, int *atag, int *alen,
                    int timeout);
/* rocl_context_gid as an int (ROCL_EINVAL if it does not fit). */
int rocl_paper_context_gid(void);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#define rocl_register rocl_paper_register
#define rocl_delete rocl_paper_delete
#define rocl_query rocl_paper_query
#define rocl_query_next rocl_paper_query_next
#define rocl_send rocl_paper_send
#define rocl_recv rocl_paper_recv
#define rocl_context_gid rocl_paper_context_gid

#endif /* ROCL_ROCL_PAPER_H */
