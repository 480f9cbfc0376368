/* vt_test_util.h: helpers shared by the trace/ unit tests (header-only). */
#ifndef VRAMTRACE_TESTS_VT_TEST_UTIL_H
#define VRAMTRACE_TESTS_VT_TEST_UTIL_H

#include "vtrace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t vtt_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A fresh private directory for one test's files; caller frees. */
static inline char *vtt_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/vtrace-test-XXXXXX", base && *base ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

/* path = dir/name in a static-free caller buffer. */
static inline void vtt_path(char *out, size_t n, const char *dir, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

/* Remove every file in dir, then dir (flat directories only). */
static inline void vtt_rmdir(char *dir, const char *const *names, size_t n)
{
    char p[1024];
    for (size_t i = 0; i < n; i++) {
        vtt_path(p, sizeof p, dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
    free(dir);
}

static inline vt_header vtt_header(void)
{
    static const char *const argv[] = {"./train", "--batch", "64"};
    vt_header h = {0};
    h.format_version = VT_FORMAT_VERSION;
    h.pid = 4242;
    h.host = "testhost";
    h.program = "/usr/bin/train";
    h.argc = 3;
    h.argv = argv;
    h.start_wall_ns = 1700000000000000000ull;
    h.start_mono_ns = 123456789;
    h.vramtrace_version = "0.1.0";
    h.stack_depth = 64;
    h.flags = 0;
    return h;
}

/* Read a whole file into a malloc'd buffer. */
static inline uint8_t *vtt_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

#endif
