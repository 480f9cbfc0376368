/* fake_vti.c: see fake_vti.h. Thread-safe (one mutex). */
#define _GNU_SOURCE
#include "fake_vti.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FAKE_MAX_STRINGS 1024

bool fake_enabled;
fake_event fake_events[FAKE_MAX_EVENTS];
size_t fake_nevents;
unsigned fake_stack_calls;

static char *strings[FAKE_MAX_STRINGS];
static uint32_t nstrings;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void fake_reset(void)
{
    pthread_mutex_lock(&lock);
    fake_nevents = 0;
    fake_stack_calls = 0;
    for (uint32_t i = 0; i < nstrings; i++)
        free(strings[i]);
    nstrings = 0;
    pthread_mutex_unlock(&lock);
}

const char *fake_string(uint32_t id)
{
    return id >= 1 && id <= nstrings ? strings[id - 1] : NULL;
}

size_t fake_count(enum vt_rec type)
{
    size_t n = 0;
    for (size_t i = 0; i < fake_nevents; i++)
        n += fake_events[i].ev.type == type;
    return n;
}

bool vti_enabled(void)
{
    return fake_enabled;
}

/* The fake session is started (or not) by the test: nothing to start. */
bool vti_recording(void)
{
    return fake_enabled;
}

uint64_t vti_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *event_text(const vt_event *ev)
{
    if (ev->type == VT_REC_NOTE)
        return ev->u.note.text;
    if (ev->type == VT_REC_THREAD)
        return ev->u.thread.name;
    return NULL;
}

int vti_emit(const vt_event *ev)
{
    if (!fake_enabled)
        return -1;
    pthread_mutex_lock(&lock);
    if (fake_nevents < FAKE_MAX_EVENTS) {
        fake_event *f = &fake_events[fake_nevents++];
        f->ev = *ev;
        f->ev.ts_ns = ev->ts_ns ? ev->ts_ns : vti_now_ns();
        f->tid = (uint32_t)gettid();
        const char *t = event_text(ev);
        snprintf(f->text, sizeof f->text, "%s", t ? t : "");
    }
    pthread_mutex_unlock(&lock);
    return 0;
}

uint32_t vti_capture_stack(int skip)
{
    (void)skip;
    __atomic_add_fetch(&fake_stack_calls, 1, __ATOMIC_RELAXED);
    return fake_enabled ? FAKE_STACK_ID : 0;
}

uint32_t vti_intern_string(const char *s)
{
    if (!fake_enabled || !s)
        return 0;
    uint32_t id = 0;
    pthread_mutex_lock(&lock);
    for (uint32_t i = 0; i < nstrings && !id; i++)
        if (strcmp(strings[i], s) == 0)
            id = i + 1;
    if (!id && nstrings < FAKE_MAX_STRINGS) {
        strings[nstrings++] = strdup(s);
        id = nstrings;
    }
    pthread_mutex_unlock(&lock);
    return id;
}

void vti_iter_begin(const char *name)
{
    (void)name; /* the exit line's growth fit: not part of what these tests check */
}

void vti_pool_iteration_end(const char *name)
{
    (void)name; /* a pool's state at iteration ends: not part of what these tests check */
}

void vti_iter_end(const char *name, int level, const char *parent)
{
    (void)name; /* the exit line's growth fit: not part of what these tests check */
    (void)level;
    (void)parent;
}
