/* fake_vti.h: a recording stand-in for the preload session (interpose/vti.h)
 * so that interpose/nvtx_inject.c can be unit-tested without the preload. */
#ifndef VRAMTRACE_TEST_FAKE_VTI_H
#define VRAMTRACE_TEST_FAKE_VTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../../interpose/vti.h"

#define FAKE_MAX_EVENTS 4096
#define FAKE_STACK_ID 77u

typedef struct fake_event {
    vt_event ev;
    uint32_t tid;   /* gettid() of the emitting thread */
    char text[256]; /* copy of note / thread-name text */
} fake_event;

extern bool fake_enabled; /* what vti_enabled() returns */
extern fake_event fake_events[FAKE_MAX_EVENTS];
extern size_t fake_nevents;
extern unsigned fake_stack_calls; /* vti_capture_stack() calls */

/* Forget events and interned strings (ids restart at 1). */
void fake_reset(void);
/* Text of an interned string id, NULL if unknown (0 included). */
const char *fake_string(uint32_t id);
/* Number of recorded events of a type. */
size_t fake_count(enum vt_rec type);

#endif
