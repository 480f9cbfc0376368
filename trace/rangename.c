/* rangename.c: NVTX range names numbered by step (vtrace.h, vt_range_stem). */
#include "vtrace.h"

#include <string.h>

size_t vt_range_stem(const char *name)
{
    size_t n = name ? strlen(name) : 0, k = n;
    while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9')
        k--;
    if (k == n)
        return 0;
    while (k > 0 && strchr(" _-.:#=", name[k - 1]))
        k--;
    return k;
}
