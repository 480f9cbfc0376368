/* The simulated device's ledger (ledger.h; format: README.md, "Ledger"). */
#define _GNU_SOURCE /* gettid */
#include "ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
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

/* Open the file for this process (again after fork); locked. -1: no ledger. */
static int ledger_open(void)
{
    pid_t pid = getpid();
    char path[4096];
    if (ledger_fd >= 0 && ledger_pid == pid)
        return ledger_fd;
    const char *spec = getenv("VRAMTRACE_SIM_LEDGER");
    if (ledger_fd >= 0)
        close(ledger_fd); /* a forked child: its own sequence */
    ledger_fd = -1;
    ledger_pid = pid;
    ledger_seq = 0;
    if (!spec || !*spec || expand_path(spec, pid, path, sizeof path) != 0)
        return -1;
    ledger_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (ledger_fd < 0)
        fprintf(stderr, "vramtrace-sim: cannot open ledger %s: %s\n", path, strerror(errno));
    return ledger_fd;
}

/* Write one line: the common fields, then `fmt` (a JSON members list). */
static void ledger_line(const char *op, const char *fmt, ...)
{
    char buf[1024];
    struct timespec ts;
    va_list ap;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    pthread_mutex_lock(&ledger_lock);
    if (ledger_open() >= 0) {
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

int vtsim_ledger_fail(const char *kind, int device, size_t size, int err)
{
    if (err == 0 || tl_failed)
        return err;
    tl_failed = tl_depth > 0;
    ledger_line("fail", ",\"kind\":\"%s\",\"device\":%d,\"size\":%zu,\"error\":%d", kind, device,
                size, err);
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

int sim_ledger_bad_free(uintptr_t addr, int err)
{
    if (err != 0)
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
