/* Device profiles and the environment that picks them (see README.md for the
 * sources of each figure). */
#include "sim_internal.h"
#include "vsize.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct sim_profile profiles[] = {
    {"t4", "Tesla T4", 15360, 304, 40, 7, 5, 4 << 20, 256, 5001000, 1590000, 1024, 65536},
    {"a100-40gb", "NVIDIA A100-SXM4-40GB", 40960, 420, 108, 8, 0, 40 << 20, 5120, 1215000, 1410000,
     2048, 167936},
    {"a100-80gb", "NVIDIA A100-SXM4-80GB", 81920, 420, 108, 8, 0, 40 << 20, 5120, 1593000, 1410000,
     2048, 167936},
    {"h100-80gb", "NVIDIA H100 80GB HBM3", 81559, 512, 132, 9, 0, 50 << 20, 5120, 2619000, 1980000,
     2048, 233472},
};

/* The profile keys, space-separated, in the table's order (README.md,
 * "Identity"): for a tool to check a VRAMTRACE_SIM_DEVICE value before it
 * starts a program. Exported from libcuda.so.1. */
static char profile_keys[256];

static void fill_keys(void)
{
    size_t len = 0;
    for (size_t i = 0; i < sizeof profiles / sizeof *profiles && len < sizeof profile_keys; i++)
        len += (size_t)snprintf(profile_keys + len, sizeof profile_keys - len, "%s%s", i ? " " : "",
                                profiles[i].key);
}

const char *vtsim_profiles(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fill_keys);
    return profile_keys;
}

static void bad_env(const char *var, const char *val, const char *want)
{
    fprintf(stderr, "vramtrace-sim: ignoring %s='%s': %s\n", var, val, want);
}

static void load_profile(struct sim_config *cfg)
{
    const char *v = getenv("VRAMTRACE_SIM_DEVICE");
    cfg->profile = &profiles[0];
    if (!v || !*v)
        return;
    for (size_t i = 0; i < sizeof profiles / sizeof *profiles; i++)
        if (strcasecmp(v, profiles[i].key) == 0) {
            cfg->profile = &profiles[i];
            return;
        }
    char want[320];
    snprintf(want, sizeof want, "expected one of: %s; using %s", vtsim_profiles(), profiles[0].key);
    bad_env("VRAMTRACE_SIM_DEVICE", v, want);
}

/* A size by the one grammar (size/vsize.h) into *out; false, with the
 * reason and want on stderr, when refused. */
static bool size_env(const char *var, const char *v, const char *want, uint64_t *out)
{
    int rc = vsize_parse(v, out);
    if (rc == VSIZE_OK)
        return true;
    char why[256];
    snprintf(why, sizeof why, "%s; %s", vsize_strerror(rc), want);
    bad_env(var, v, why);
    return false;
}

static void load_sizes(struct sim_config *cfg)
{
    static const char want_reserve[] = "expected a size (" VSIZE_EXAMPLES ") of at most 16TiB, "
                                       "such as 300MiB or 0; using the profile's";
    const char *v = getenv("VRAMTRACE_SIM_CONTEXT_RESERVE");
    uint64_t n;
    cfg->reserve = cfg->profile->reserve_mib * SIM_MiB;
    if (v && *v && size_env("VRAMTRACE_SIM_CONTEXT_RESERVE", v, want_reserve, &n)) {
        if (n <= ((uint64_t)1 << 44))
            cfg->reserve = (n + SIM_LARGE_ALIGN - 1) / SIM_LARGE_ALIGN * SIM_LARGE_ALIGN;
        else
            bad_env("VRAMTRACE_SIM_CONTEXT_RESERVE", v, want_reserve);
    }
    cfg->capacity = cfg->profile->total_mib * SIM_MiB;
    v = getenv("VRAMTRACE_SIM_MEMORY");
    if (!v || !*v)
        return;
    static const char want[] = "expected a size (" VSIZE_EXAMPLES ") above the context reserve "
                               "and at most 16TiB; using the profile's";
    if (!size_env("VRAMTRACE_SIM_MEMORY", v, want, &n))
        return;
    if (n > cfg->reserve && n <= ((uint64_t)1 << 44))
        cfg->capacity = n;
    else
        bad_env("VRAMTRACE_SIM_MEMORY", v, want);
}

static void load_count(struct sim_config *cfg)
{
    const char *v = getenv("VRAMTRACE_SIM_DEVICES");
    cfg->ndevices = 1;
    if (!v || !*v)
        return;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || *end || end == v || n < 1 || n > SIM_MAX_DEVICES)
        bad_env("VRAMTRACE_SIM_DEVICES", v, "expected a count from 1 to 16; using 1");
    else
        cfg->ndevices = (int)n;
}

void sim_config_load(struct sim_config *cfg)
{
    load_profile(cfg);
    load_sizes(cfg);
    load_count(cfg);
}
