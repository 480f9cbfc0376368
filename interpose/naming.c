/* naming.c: which file this process records into, by the run's naming rule
 * (trace/vtrace.h, "Run naming"), and the run id it inherits or starts.
 * See README.md, "Processes and runs". */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vti_internal.h"

void vti_run_init(void)
{
    char id[VT_RUN_ID_LEN + 1];
    if (vt_run_id_valid(getenv(VT_ENV_RUN_ID)) || vt_run_id_new(id) != 0)
        return;
    setenv(VT_ENV_RUN_ID, id, 1); /* the first preloaded process starts the run */
}

void vti_run_header(vt_header *h)
{
    const char *id = getenv(VT_ENV_RUN_ID);
    int32_t rank = vt_rank_from_env();
    h->run_id = vt_run_id_valid(id) ? id : "";
    h->ppid = (uint32_t)getppid();
    h->has_rank = rank >= 0;
    h->rank = rank >= 0 ? (uint32_t)rank : 0;
}

/* Candidate n (0, 1, ...) of the rule: the run's name, then pid inserted. */
static int candidate(const vti_settings *s, const char *program, uint32_t pid, unsigned n,
                     char *out, size_t len)
{
    if (s->output_is_default)
        return vt_name_default(program, pid, n, out, len);
    if (!n)
        return snprintf(out, len, "%s", s->output) < (int)len ? 0 : -1;
    return vt_name_with_pid(s->output, pid, n - 1, out, len);
}

/* An existing trace written by another run (its header names another run
 * id). A file still empty or unreadable is a sibling of this run being
 * created (the header follows the O_EXCL create with one write). */
static bool from_other_run(const char *path, const char *run_id)
{
    char err[256];
    struct stat st;
    bool other;
    if (stat(path, &st) != 0 || st.st_size < 16)
        return false;
    vt_reader *r = vt_reader_open(path, err, sizeof err);
    if (!r)
        return true;
    other = strcmp(vt_reader_header(r)->run_id, run_id) != 0;
    vt_reader_close(r);
    return other;
}

vt_writer *vti_trace_open(const vti_settings *s, const vt_header *h, char *path, size_t len,
                          char *err, size_t errlen)
{
    struct stat st;
    const char *program = strrchr(h->program, '/');
    program = program ? program + 1 : (*h->program ? h->program : "unknown");
    for (unsigned n = 0; n < 100; n++) {
        if (candidate(s, program, h->pid, n, path, len) != 0) {
            snprintf(err, errlen, "cannot name the trace: the name is too long");
            return NULL;
        }
        if (lstat(path, &st) == 0)
            continue;
        vt_writer *w = vt_writer_open(path, h, NULL, err, errlen);
        if (w || lstat(path, &st) != 0) /* lost an O_EXCL race: try the next name */
            return w;
    }
    snprintf(err, errlen, "cannot name the trace: 100 names taken, the last %s", path);
    return NULL;
}

void vti_trace_announce(const vti_settings *s, const vt_header *h, const char *path)
{
    const char *list = getenv(VT_ENV_RUN_LIST);
    if (list && *list)
        vt_run_list_add(list, path);
    if (s->quiet || s->output_is_default || !strcmp(path, s->output) ||
        !from_other_run(s->output, h->run_id))
        return;
    vti_msg("vramtrace: %s is from an earlier run and is kept; this trace is %s\n", s->output,
            path);
}
