/* settings.c: VRAMTRACE_* environment of the preload library (README.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vti_internal.h"

static void bad_setting(const char *name, const char *value, const char *expect,
                        const char *fallback)
{
    vti_msg("vramtrace: ignoring %s='%s': expected %s; using %s\n", name, value, expect, fallback);
}

static int append(char *out, size_t outlen, size_t *n, const char *s)
{
    size_t len = strlen(s);
    if (*n + len + 1 > outlen)
        return -1;
    memcpy(out + *n, s, len + 1);
    *n += len;
    return 0;
}

int vti_expand_path(const char *pattern, int pid, const char *host, char *out, size_t outlen)
{
    size_t n = 0;
    char tmp[32];
    if (outlen == 0)
        return -1;
    out[0] = '\0';
    for (const char *p = pattern; *p; p++) {
        const char *piece = tmp;
        if (*p != '%') {
            tmp[0] = *p;
            tmp[1] = '\0';
        } else if (p[1] == 'p') {
            snprintf(tmp, sizeof tmp, "%d", pid);
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
        if (append(out, outlen, &n, piece) != 0)
            return -1;
    }
    return n > 0 ? 0 : -1;
}

static void read_output(vti_settings *s, const char *program, int pid)
{
    char host[256] = "unknown";
    const char *v = getenv("VRAMTRACE_OUTPUT");
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    s->output_is_default = true;
    if (v && *v) {
        if (vti_expand_path(v, pid, host, s->output, sizeof s->output) == 0) {
            s->output_is_default = false;
            return;
        }
        bad_setting("VRAMTRACE_OUTPUT", v, "a path with only %p, %h or %% escapes",
                    "vramtrace.<program>.<pid>.vtrace");
    }
    snprintf(s->output, sizeof s->output, "vramtrace.%s.%d.vtrace", program, pid);
}

static void read_depth(vti_settings *s)
{
    const char *v = getenv("VRAMTRACE_STACK_DEPTH");
    char *end = NULL;
    long d;
    s->stack_depth = VTI_DEFAULT_STACK_DEPTH;
    if (!v)
        return;
    errno = 0;
    d = strtol(v, &end, 10);
    if (errno || end == v || *end || d < 0 || d > VTI_MAX_STACK_DEPTH) {
        bad_setting("VRAMTRACE_STACK_DEPTH", v, "an integer 0..256", "64");
        return;
    }
    s->stack_depth = (int)d;
}

static void read_quiet(vti_settings *s)
{
    const char *v = getenv("VRAMTRACE_QUIET");
    s->quiet = false;
    if (!v || !*v || strcmp(v, "0") == 0)
        return;
    if (strcmp(v, "1") == 0) {
        s->quiet = true;
        return;
    }
    bad_setting("VRAMTRACE_QUIET", v, "0 or 1", "0");
}

void vti_settings_read(vti_settings *s, const char *program, int pid)
{
    read_quiet(s);
    read_depth(s);
    read_output(s, program, pid);
}
