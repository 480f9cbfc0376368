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
        bad_setting(s, "VRAMTRACE_OUTPUT", v, VT_NAME_PATTERN_RULE, VT_NAME_DEFAULT_SHOWN);
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

/* A 0-or-1 variable: unset or empty gives dflt; anything else is named on
 * stderr (unless quiet) and gives dflt. */
static bool read_flag(vti_settings *s, const char *name, bool dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    if (strcmp(v, "0") == 0 || strcmp(v, "1") == 0)
        return v[0] == '1';
    bad_setting(s, name, v, "0 or 1", dflt ? "1" : "0");
    return dflt;
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
    s->quiet = false;                                  /* a bad VRAMTRACE_QUIET itself is named */
    s->quiet = read_flag(s, "VRAMTRACE_QUIET", false); /* first: it silences the others */
    s->python_frames = read_flag(s, "VRAMTRACE_PYTHON_FRAMES", true);
    s->cupti = read_flag(s, "VRAMTRACE_CUPTI", false);
    read_depth(s);
    read_unwind(s);
    read_output(s, pid);
}
