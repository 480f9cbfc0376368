/* strings.c: interned strings of the trace (VT_REC_STRING once per distinct
 * string, ids from 1): a small chained hash under one lock. Written through
 * the calling thread's buffer (session.c). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vti_internal.h"

typedef struct istr {
    struct istr *next;
    uint32_t id;
    char text[];
} istr;
#define ISTR_BUCKETS 1024
#define ISTR_MAX 100000
static istr *istr_table[ISTR_BUCKETS];
static uint32_t istr_count;
static pthread_mutex_t istr_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t istr_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static uint32_t istr_add(vti_thread *t, const char *s, uint32_t h)
{
    size_t len = strlen(s);
    istr *e;
    vt_event ev = {.type = VT_REC_STRING};
    if (istr_count >= ISTR_MAX || !(e = malloc(sizeof *e + len + 1)))
        return 0;
    memcpy(e->text, s, len + 1);
    e->id = ++istr_count;
    e->next = istr_table[h % ISTR_BUCKETS];
    istr_table[h % ISTR_BUCKETS] = e;
    ev.u.string.id = e->id;
    ev.u.string.text = s;
    vti_write(t, &ev);
    return e->id;
}

uint32_t vti_intern(vti_thread *t, const char *s)
{
    uint32_t h = istr_hash(s), id = 0;
    pthread_mutex_lock(&istr_lock);
    for (istr *e = istr_table[h % ISTR_BUCKETS]; e; e = e->next)
        if (strcmp(e->text, s) == 0) {
            id = e->id;
            break;
        }
    if (!id)
        id = istr_add(t, s, h);
    pthread_mutex_unlock(&istr_lock);
    return id;
}

void vti_strings_fork_reset(void)
{
    memset(istr_table, 0, sizeof istr_table); /* the parent's entries are left, not freed */
    istr_count = 0;
    pthread_mutex_init(&istr_lock, NULL);
}
