/* run_files.c: which traces `vramtrace report a.vtrace` reads: the given
 * ones and, for each, the traces of its run that carry its name with a pid
 * inserted (trace/vtrace.h, "Run naming": vt_name_is_sibling and the run
 * id in the header). */
#include "cli.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* path's run id (vt_run_id_valid) into id, or "" when it has none or
 * cannot be read. Only a regular file is read here: a pipe (`vramtrace
 * report /dev/stdin`) can be read once, by the report, and a FIFO beside a
 * trace would block the open; neither has siblings to find. */
static void run_id_of(const char *path, char id[VT_RUN_ID_LEN + 1])
{
    char err[256];
    struct stat st;
    id[0] = '\0';
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    vt_reader *rd = vt_reader_open(path, err, sizeof err);
    if (!rd)
        return;
    const char *h = vt_reader_header(rd)->run_id;
    if (vt_run_id_valid(h))
        snprintf(id, VT_RUN_ID_LEN + 1, "%s", h);
    vt_reader_close(rd);
}

typedef struct strvec {
    char **v;
    size_t n, cap;
    bool nomem;
} strvec;

static void sv_add(strvec *sv, const char *s)
{
    for (size_t i = 0; i < sv->n; i++)
        if (!strcmp(sv->v[i], s))
            return;
    if (sv->n == sv->cap) {
        size_t cap = sv->cap ? 2 * sv->cap : 8;
        char **v = realloc(sv->v, cap * sizeof *v);
        if (!v) {
            sv->nomem = true;
            return;
        }
        sv->v = v;
        sv->cap = cap;
    }
    if (!(sv->v[sv->n] = strdup(s)))
        sv->nomem = true;
    else
        sv->n++;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Add the traces next to run_name that carry its name with a pid inserted
 * and belong to run_id, sorted by name. */
static void add_siblings(strvec *sv, const char *run_name, const char *run_id)
{
    const char *slash = strrchr(run_name, '/');
    size_t dlen = slash ? (size_t)(slash - run_name) + 1 : 0;
    char dir[4096], path[8192], id[VT_RUN_ID_LEN + 1];
    snprintf(dir, sizeof dir, "%.*s", (int)(dlen ? dlen : 1), dlen ? run_name : ".");
    DIR *d = opendir(dir);
    size_t first = sv->n;
    for (struct dirent *e; d && (e = readdir(d));) {
        snprintf(path, sizeof path, "%.*s%s", (int)dlen, run_name, e->d_name);
        if (!vt_name_is_sibling(run_name, path))
            continue;
        run_id_of(path, id);
        if (!strcmp(id, run_id))
            sv_add(sv, path);
    }
    if (d)
        closedir(d);
    qsort(sv->v + first, sv->n - first, sizeof *sv->v, cmp_str);
}

int cli_run_files(char **paths, size_t n, char ***out, size_t *nout)
{
    strvec sv = {0};
    char id[VT_RUN_ID_LEN + 1];
    for (size_t i = 0; i < n; i++) {
        sv_add(&sv, paths[i]);
        run_id_of(paths[i], id);
        if (id[0])
            add_siblings(&sv, paths[i], id);
    }
    if (sv.nomem) {
        fputs("vramtrace report: out of memory\n", stderr);
        cli_run_files_free(sv.v, sv.n);
        return -1;
    }
    *out = sv.v;
    *nout = sv.n;
    return 0;
}

void cli_run_files_free(char **files, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
}
