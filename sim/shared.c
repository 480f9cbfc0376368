/* shared.c: simulated devices shared by several processes (README.md,
 * "Devices shared by processes"). With VRAMTRACE_SIM_SHARED=FILE every
 * process using the simulated device publishes the bytes it takes on each
 * device in FILE (one fixed-size slot per process and device, under flock),
 * and counts what the other live processes take against the capacity. */
#include "sim_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#define SHARED_SLOTS 1024

struct shared_slot {
    int32_t pid, device;
    uint64_t bytes;
};

static char shared_path[4096];

void sim_shared_init(void)
{
    const char *v = getenv("VRAMTRACE_SIM_SHARED");
    if (v && *v)
        snprintf(shared_path, sizeof shared_path, "%s", v);
}

static int shared_open(int how)
{
    int fd = open(shared_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0 && flock(fd, how) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int alive(int32_t pid)
{
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

static size_t read_slots(int fd, struct shared_slot *s)
{
    ssize_t n = pread(fd, s, SHARED_SLOTS * sizeof *s, 0);
    return n > 0 ? (size_t)n / sizeof *s : 0;
}

/* The slow paths, only with VRAMTRACE_SIM_SHARED set: the unset case costs
 * one branch per allocation and free. */
static __attribute__((noinline)) size_t others_read(int device)
{
    struct shared_slot s[SHARED_SLOTS]; /* 16 KiB */
    size_t sum = 0, n;
    int32_t me = (int32_t)getpid();
    int fd = shared_open(LOCK_SH);
    if (fd < 0)
        return 0;
    n = read_slots(fd, s);
    for (size_t i = 0; i < n; i++)
        if (s[i].device == device && s[i].pid != me && alive(s[i].pid))
            sum += s[i].bytes;
    close(fd);
    return sum;
}

static __attribute__((noinline)) void publish_write(int device, size_t bytes)
{
    struct shared_slot s[SHARED_SLOTS]; /* 16 KiB */
    int32_t me = (int32_t)getpid();
    size_t n, at = SIZE_MAX;
    int fd = shared_open(LOCK_EX);
    if (fd < 0)
        return;
    n = read_slots(fd, s);
    for (size_t i = 0; i < n && at == SIZE_MAX; i++)
        if (s[i].pid == me && s[i].device == device)
            at = i;
    for (size_t i = 0; i < n && at == SIZE_MAX; i++)
        if (!alive(s[i].pid))
            at = i;
    if (at == SIZE_MAX && n < SHARED_SLOTS)
        at = n;
    if (at != SIZE_MAX) {
        struct shared_slot mine = {me, device, bytes};
        if (pwrite(fd, &mine, sizeof mine, (off_t)(at * sizeof mine)) != (ssize_t)sizeof mine)
            fprintf(stderr, "vramtrace-sim: cannot update %s\n", shared_path);
    }
    close(fd);
}

size_t sim_shared_others(int device)
{
    return shared_path[0] ? others_read(device) : 0;
}

void sim_shared_publish(int device, size_t bytes)
{
    if (shared_path[0])
        publish_write(device, bytes);
}
