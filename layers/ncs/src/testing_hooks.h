/* testing_hooks.h - what NCS's tests use to break things on purpose. */
#ifndef ROCL_NCS_TESTING_HOOKS_H
#define ROCL_NCS_TESTING_HOOKS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The next message this process sends with a payload has the payload byte
 * at offset (modulo its size) flipped after its checksum was computed, as a
 * corrupting link would. */
__attribute__((visibility("default"))) void ncs_testing_corrupt_next_send(size_t offset);

#ifdef __cplusplus
}
#endif
#endif
