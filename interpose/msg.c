/* msg.c: messages of the preload library on the stderr the program started
 * with, and only while descriptor 2 is still that file (README.md, "What the
 * program sees"). The lowest layer: calls nothing else of interpose/. */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vti_internal.h"

enum { ERR_UNKNOWN, ERR_KNOWN, ERR_NONE };
static _Atomic int err_state = ERR_UNKNOWN;
static dev_t err_dev;
static ino_t err_ino;

void vti_msg_init(void)
{
    struct stat st;
    int expected = ERR_UNKNOWN;
    if (fstat(STDERR_FILENO, &st) != 0) {
        atomic_compare_exchange_strong(&err_state, &expected, ERR_NONE);
        return;
    }
    err_dev = st.st_dev;
    err_ino = st.st_ino;
    atomic_compare_exchange_strong(&err_state, &expected, ERR_KNOWN);
}

/* Is descriptor 2 still the file it was when the preload started? */
static bool stderr_is_original(void)
{
    struct stat st;
    if (atomic_load(&err_state) == ERR_UNKNOWN)
        vti_msg_init();
    return atomic_load(&err_state) == ERR_KNOWN && fstat(STDERR_FILENO, &st) == 0 &&
           st.st_dev == err_dev && st.st_ino == err_ino;
}

void vti_msg(const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n <= 0 || !stderr_is_original())
        return;
    size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
    for (const char *p = buf; len > 0;) {
        ssize_t k = write(STDERR_FILENO, p, len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return;
        p += k;
        len -= (size_t)k;
    }
}
