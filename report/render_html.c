#include "internal.h"
int vr_render_html(FILE *out, vr_report *const *r, size_t n, const vr_options *opt)
{
    (void)out;
    (void)r;
    (void)n;
    (void)opt;
    return -1;
}
