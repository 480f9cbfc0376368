/* render_folded.c: --folded FILE: bytes live at the peak per stack, one line
 * "root;...;leaf bytes" (Brendan Gregg's folded format, read by
 * flamegraph.pl and speedscope). Several files: each file's basename is an
 * extra root frame. */
#include "internal.h"

#include <inttypes.h>
#include <string.h>

/* A frame label without the separators of the format (';', newlines). */
static void label(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc(*s == ';' ? ':' : (*s == '\n' || *s == '\r') ? ' ' : *s, f);
}

static void line(FILE *f, const char *root, const vr_site *s)
{
    bool first = true;
    if (root) {
        label(f, root);
        first = false;
    }
    if (!s->stack.n) {
        fputs(first ? "(no stack)" : ";(no stack)", f);
    }
    for (size_t i = s->stack.n; i-- > 0;) {
        char buf[512];
        if (!first)
            fputc(';', f);
        label(f, vr_frame_name(&s->stack.frames[i], buf, sizeof buf));
        first = false;
    }
    fprintf(f, " %" PRIu64 "\n", s->bytes);
}

/* The stacks a report left out of its sites (vr_left_out) as one frame
 * of their own, so that the lines still sum to the peak. */
static void left_out(FILE *f, const char *root, const vr_left_out *lo)
{
    if (!lo->stacks)
        return;
    if (root) {
        label(f, root);
        fputc(';', f);
    }
    fprintf(f, "(%" PRIu64 " smaller stacks not listed) %" PRIu64 "\n", lo->stacks, lo->bytes);
}

int vr_render_folded(FILE *out, vr_report *const *r, size_t n, const vr_options *opt)
{
    (void)opt;
    for (size_t k = 0; k < n; k++) {
        const char *root = n > 1 ? vr_basename(r[k]->path) : NULL;
        for (size_t i = 0; i < r[k]->nsites; i++)
            line(out, root, &r[k]->sites[i]);
        left_out(out, root, &r[k]->sites_left_out);
    }
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
