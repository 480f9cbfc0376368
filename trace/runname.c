/* runname.c: how the processes of one run name their traces (vtrace.h,
 * "Run naming"): the one rule both the preload library and `vramtrace run`
 * / `vramtrace report` follow. */
#include "vtrace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static int append(char *out, size_t len, size_t *n, const char *s)
{
    size_t k = strlen(s);
    if (*n + k + 1 > len)
        return -1;
    memcpy(out + *n, s, k + 1);
    *n += k;
    return 0;
}

int vt_name_expand(const char *pattern, uint32_t pid, const char *host, char *out, size_t len)
{
    size_t n = 0;
    char tmp[32];
    if (!len)
        return -1;
    out[0] = '\0';
    for (const char *p = pattern; *p; p++) {
        const char *piece = tmp;
        if (*p != '%') {
            tmp[0] = *p;
            tmp[1] = '\0';
        } else if (p[1] == 'p') {
            snprintf(tmp, sizeof tmp, "%u", pid);
            p++;
        } else if (p[1] == 'h') {
            piece = host;
            p++;
        } else if (p[1] == '%') {
            piece = "%";
            p++;
        } else {
            return -1;
        }
        if (append(out, len, &n, piece) != 0)
            return -1;
    }
    return n > 0 ? 0 : -1;
}

bool vt_name_has_pid(const char *pattern)
{
    for (const char *p = pattern; p && *p; p++)
        if (*p == '%' && p[1]) {
            if (p[1] == 'p')
                return true;
            p++; /* %%, %h, or a bad escape vt_name_expand refuses */
        }
    return false;
}

int vt_name_default(const char *program, uint32_t pid, unsigned n, char *out, size_t len)
{
    int w = n ? snprintf(out, len, "vramtrace.%s.%u.%u.vtrace", program, pid, n)
              : snprintf(out, len, "vramtrace.%s.%u.vtrace", program, pid);
    return w > 0 && (size_t)w < len ? 0 : -1;
}

/* Offset of the extension's dot in name's last component, or its length. */
static size_t ext_at(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    const char *dot = strrchr(base, '.');
    return dot && dot > base ? (size_t)(dot - name) : strlen(name);
}

int vt_name_with_pid(const char *name, uint32_t pid, unsigned n, char *out, size_t len)
{
    size_t at = ext_at(name);
    char mid[40];
    int w = n ? snprintf(mid, sizeof mid, ".%u.%u", pid, n) : snprintf(mid, sizeof mid, ".%u", pid);
    if (w < 0 || at + (size_t)w + strlen(name + at) + 1 > len)
        return -1;
    memcpy(out, name, at);
    memcpy(out + at, mid, (size_t)w);
    strcpy(out + at + w, name + at);
    return 0;
}

bool vt_name_is_sibling(const char *run_name, const char *path)
{
    size_t at = ext_at(run_name), plen = strlen(path), elen = strlen(run_name + at);
    const char *p = path + at;
    if (plen <= at + elen || strncmp(path, run_name, at) != 0 ||
        strcmp(path + plen - elen, run_name + at) != 0 || *p != '.')
        return false;
    p++;
    if (*p < '0' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9')
        p++;
    if (*p == '.' && p[1] >= '0' && p[1] <= '9') /* .<pid>.<n> */
        for (p++; *p >= '0' && *p <= '9';)
            p++;
    return p == path + plen - elen;
}

int vt_run_id_new(char out[VT_RUN_ID_LEN + 1])
{
    uint8_t b[VT_RUN_ID_LEN / 2];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
        return -1;
    for (size_t i = 0; i < sizeof b; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    return 0;
}

bool vt_run_id_valid(const char *s)
{
    size_t n = 0;
    for (; s && s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return false;
    return n == VT_RUN_ID_LEN;
}

int32_t vt_rank_from_env(void)
{
    static const char *const names[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        char *end;
        if (!v || !*v)
            continue;
        errno = 0;
        long r = strtol(v, &end, 10);
        if (!errno && !*end && r >= 0 && r <= INT32_MAX)
            return (int32_t)r;
    }
    return -1;
}

int vt_run_list_add(const char *list, const char *path)
{
    char line[4200], cwd[4096];
    int w;
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd))
        w = snprintf(line, sizeof line, "%s\n", path);
    else
        w = snprintf(line, sizeof line, "%s/%s\n", cwd, path);
    if (w <= 0 || (size_t)w >= sizeof line)
        return -1;
    int fd = open(list, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, line, (size_t)w); /* O_APPEND: one line, never interleaved */
    int e = errno;
    close(fd);
    errno = e;
    return n == w ? 0 : -1;
}
