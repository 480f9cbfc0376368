/* rangename.c: NVTX range names numbered by step (vtrace.h, vt_range_stem). */
#include "vtrace.h"

#include <stdint.h>
#include <string.h>

bool vt_range_is_operator(const char *name)
{
    static const char *const fields[] = {", seq = ", ", op_id = ", ", sizes = [",
                                         ", input_op_ids = ["};
    for (size_t i = 0; name && i < sizeof fields / sizeof fields[0]; i++)
        if (strstr(name, fields[i]))
            return true;
    return false;
}

size_t vt_range_stem(const char *name)
{
    if (vt_range_is_operator(name))
        return 0;
    size_t n = name ? strlen(name) : 0, k = n;
    while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9')
        k--;
    if (k == n)
        return 0;
    while (k > 0 && strchr(" _-.:#=", name[k - 1]))
        k--;
    return k;
}

uint64_t vt_range_number(const char *name, size_t stem)
{
    uint64_t v = 0;
    for (const char *d = name ? name + stem : ""; *d; d++)
        if (*d >= '0' && *d <= '9')
            v = v > (UINT64_MAX - 9) / 10 ? UINT64_MAX : v * 10 + (uint64_t)(*d - '0');
    return v;
}
