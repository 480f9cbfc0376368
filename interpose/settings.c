/* settings.c: VRAMTRACE_* environment of the preload library (README.md),
 * read once at session start and held here. Calls only msg.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vti_internal.h"

static void bad_setting(const vti_settings *s, const char *name, const char *value,
                        const char *expect, const char *fallback)
{
    if (s->quiet)
        return;
    vti_msg("vramtrace: ignoring %s='%s': expected %s; using %s\n", name, value, expect, fallback);
}

static void read_output(vti_settings *s, int pid)
{
    char host[256] = "unknown";
    const char *v = getenv(VT_ENV_OUTPUT);
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    s->output_is_default = true;
    if (v && *v) {
        if (vt_name_expand(v, (uint32_t)pid, host, s->output, sizeof s->output) == 0) {
            s->output_is_default = false;
            return;
        }
        bad_setting(s, "VRAMTRACE_OUTPUT", v, "a path with only %p, %h or %% escapes",
                    "vramtrace.<program>.<pid>.vtrace");
    }
    s->output[0] = '\0';
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
        bad_setting(s, "VRAMTRACE_STACK_DEPTH", v, "an integer 0..256", "64");
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
    bad_setting(s, "VRAMTRACE_QUIET", v, "0 or 1", "0");
}

/* VRAMTRACE_PYTHON_FRAMES: 0 = native stacks only in a Python process. */
static void read_python_frames(vti_settings *s)
{
    const char *v = getenv("VRAMTRACE_PYTHON_FRAMES");
    s->python_frames = true;
    if (!v || !*v || strcmp(v, "1") == 0)
        return;
    if (strcmp(v, "0") == 0) {
        s->python_frames = false;
        return;
    }
    bad_setting(s, "VRAMTRACE_PYTHON_FRAMES", v, "0 or 1", "1");
}

/* VRAMTRACE_UNWIND: fast (default), libunwind or check. */
static void read_unwind(vti_settings *s)
{
    const char *v = getenv("VRAMTRACE_UNWIND");
    s->unwind = VTI_UNWIND_FAST;
    if (!v || !*v || strcmp(v, "fast") == 0)
        return;
    if (strcmp(v, "libunwind") == 0)
        s->unwind = VTI_UNWIND_LIBUNWIND;
    else if (strcmp(v, "check") == 0)
        s->unwind = VTI_UNWIND_CHECK;
    else
        bad_setting(s, "VRAMTRACE_UNWIND", v, "fast, libunwind or check", "fast");
}

/* The settings in force: the defaults until the session starts. */
static vti_settings settings = {.stack_depth = VTI_DEFAULT_STACK_DEPTH, .python_frames = true};

const vti_settings *vti_settings_get(void)
{
    return &settings;
}

void vti_settings_read(int pid)
{
    vti_settings *s = &settings;
    read_quiet(s); /* first: it silences the complaints of the others */
    read_python_frames(s);
    read_depth(s);
    read_unwind(s);
    read_output(s, pid);
}
