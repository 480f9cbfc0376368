/* The simulated device's ledger (ledger.h; format: README.md, "Ledger"). */
#define _GNU_SOURCE /* gettid */
#include "ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The process's ledger: its file and sequence number (sim process state). */
static pthread_mutex_t ledger_lock = PTHREAD_MUTEX_INITIALIZER;
static int ledger_fd = -1;
static pid_t ledger_pid;
static uint64_t ledger_seq;
static int ledger_used; /* a line was written by this copy of the ledger */

/* The calling thread's API scope. */
static __thread const char *tl_api;
static __thread int tl_depth, tl_failed;

/* FILE with each "%p" replaced by the pid; 0, or -1 when too long. */
static int expand_path(const char *spec, pid_t pid, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *s = spec; *s; s++) {
        int w = (s[0] == '%' && s[1] == 'p') ? snprintf(out + n, cap - n, "%d", (int)pid)
                                             : snprintf(out + n, cap - n, "%c", *s);
        if (w < 0 || (size_t)w >= cap - n)
            return -1;
        n += (size_t)w;
        s += (s[0] == '%' && s[1] == 'p');
    }
    return 0;
}

/* Whether this process has a ledger: unknown until the first line is due,
 * then off or on for the life of the process (a forked child starts over). */
enum { LEDGER_UNKNOWN, LEDGER_OFF, LEDGER_ON };
static _Atomic int ledger_state = LEDGER_UNKNOWN;
static pthread_once_t ledger_once = PTHREAD_ONCE_INIT;

/* A forked child writes its own lines, numbered from 1 (its fork-time copy of
 * the lock may be held: it is reset, as the child has one thread). */
static void ledger_child(void)
{
    if (ledger_fd >= 0)
        close(ledger_fd);
    ledger_fd = -1;
    ledger_seq = 0;
    pthread_mutex_init(&ledger_lock, NULL);
    atomic_store(&ledger_state, LEDGER_UNKNOWN);
}

static void ledger_register_fork(void)
{
    pthread_atfork(NULL, NULL, ledger_child);
}

/* Open the file for this process once; locked. -1: no ledger. */
static int ledger_open(void)
{
    char path[4096];
    if (atomic_load(&ledger_state) != LEDGER_UNKNOWN)
        return ledger_fd;
    pthread_once(&ledger_once, ledger_register_fork);
    const char *spec = getenv("VRAMTRACE_SIM_LEDGER");
    ledger_pid = getpid();
    ledger_seq = 0;
    if (spec && *spec && expand_path(spec, ledger_pid, path, sizeof path) == 0) {
        ledger_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (ledger_fd < 0)
            fprintf(stderr, "vramtrace-sim: cannot open ledger %s: %s\n", path, strerror(errno));
    }
    atomic_store(&ledger_state, ledger_fd >= 0 ? LEDGER_ON : LEDGER_OFF);
    return ledger_fd;
}

/* Write one line: the common fields, then `fmt` (a JSON members list). */
static void ledger_line(const char *op, const char *fmt, ...)
{
    char buf[1024];
    struct timespec ts;
    va_list ap;
    if (atomic_load_explicit(&ledger_state, memory_order_acquire) == LEDGER_OFF)
        return; /* no ledger asked for: nothing on the allocation path */
    pthread_mutex_lock(&ledger_lock);
    if (ledger_open() >= 0) {
        /* stamped once the file is open: a process's first line opens it,
         * which took 4.2 ms on a loaded machine, and stamped before that the
         * line read as that much earlier than the call's effect */
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int n = snprintf(
            buf, sizeof buf,
            "{\"seq\":%llu,\"pid\":%d,\"tid\":%d,\"t_ns\":%llu,\"op\":\"%s\",\"api\":\"%s\"",
            (unsigned long long)++ledger_seq, (int)ledger_pid, (int)gettid(),
            (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec, op,
            tl_api ? tl_api : "");
        va_start(ap, fmt);
        n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
        va_end(ap);
        n += snprintf(buf + n, sizeof buf - (size_t)n, "}\n");
        if (write(ledger_fd, buf, (size_t)n) == n)
            ledger_used = 1;
    }
    pthread_mutex_unlock(&ledger_lock);
}

int vtsim_ledger_enter(const char *api)
{
    if (tl_depth++ == 0) {
        tl_api = api;
        tl_failed = 0;
    }
    return tl_depth;
}

void vtsim_ledger_leave(int token)
{
    if (token == tl_depth && --tl_depth == 0)
        tl_api = NULL;
}

void sim_ledger_scope_end(int *token)
{
    vtsim_ledger_leave(*token);
}

/* A device's state for fail lines: told by the driver's devices
 * (device.c); none in the runtime's copy. */
static bool (*device_state)(int device, struct sim_ledger_device *out);

void sim_ledger_device_source(bool (*state)(int device, struct sim_ledger_device *out))
{
    device_state = state;
}

int vtsim_ledger_fail(const char *kind, int device, size_t size, int err)
{
    struct sim_ledger_device st;
    if (err == 0 || tl_failed)
        return err;
    tl_failed = tl_depth > 0;
    if (device < 0 || !device_state || !device_state(device, &st))
        ledger_line("fail", ",\"kind\":\"%s\",\"device\":%d,\"size\":%zu,\"error\":%d", kind,
                    device, size, err);
    else if (err == 2 && st.graph_pool) /* out of memory while the graph pool holds memory */
        ledger_line("fail",
                    ",\"kind\":\"%s\",\"device\":%d,\"size\":%zu,\"error\":%d,\"free\":%zu,"
                    "\"total\":%zu,\"outside\":%zu,\"graph_pool\":%zu",
                    kind, device, size, err, st.free, st.total, st.outside, st.graph_pool);
    else
        ledger_line("fail",
                    ",\"kind\":\"%s\",\"device\":%d,\"size\":%zu,\"error\":%d,\"free\":%zu,"
                    "\"total\":%zu,\"outside\":%zu",
                    kind, device, size, err, st.free, st.total, st.outside);
    return err;
}

void sim_ledger_alloc(const char *kind, int device, uintptr_t addr, size_t size)
{
    ledger_line("alloc",
                ",\"error\":0,\"kind\":\"%s\",\"device\":%d,\"addr\":\"0x%jx\",\"size\":%zu", kind,
                device, (uintmax_t)addr, size);
}

void sim_ledger_free(const char *kind, int device, uintptr_t addr, size_t size)
{
    ledger_line("free",
                ",\"error\":0,\"kind\":\"%s\",\"device\":%d,\"addr\":\"0x%jx\",\"size\":%zu", kind,
                device, (uintmax_t)addr, size);
}

void sim_ledger_pool(const char *op, int device, uintptr_t addr, size_t size)
{
    ledger_line(op, ",\"error\":0,\"device\":%d,\"addr\":\"0x%jx\",\"size\":%zu", device,
                (uintmax_t)addr, size);
}

int sim_ledger_bad_free(uintptr_t addr, int err)
{
    if (err != 0 && err != 4 && err != 709) /* DEINITIALIZED, CONTEXT_IS_DESTROYED */
        ledger_line("bad_free", ",\"addr\":\"0x%jx\",\"error\":%d", (uintmax_t)addr, err);
    return err;
}

void sim_ledger_vmm(const char *op, uintptr_t handle, int device, uintptr_t addr, size_t size)
{
    if (strcmp(op, "vmm_map") == 0 || strcmp(op, "vmm_unmap") == 0)
        ledger_line(
            op, ",\"error\":0,\"handle\":\"0x%jx\",\"device\":%d,\"addr\":\"0x%jx\",\"size\":%zu",
            (uintmax_t)handle, device, (uintmax_t)addr, size);
    else
        ledger_line(op, ",\"error\":0,\"handle\":\"0x%jx\",\"device\":%d,\"size\":%zu",
                    (uintmax_t)handle, device, size);
}

/* At exit: what is live now is leaked. The driver always writes it when a
 * ledger is asked for; the runtime's copy only when it wrote lines itself
 * (no driver was loaded). */
#ifdef SIM_LEDGER_OWNER
#define LEDGER_EXIT_ALWAYS 1
#else
#define LEDGER_EXIT_ALWAYS 0
#endif
__attribute__((destructor)) static void ledger_exit(void)
{
    if (LEDGER_EXIT_ALWAYS || ledger_used) {
        tl_api = NULL;
        ledger_line("exit", ",\"error\":0");
    }
}
