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

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Appends n bytes of p to out (cap bytes, kept NUL-terminated) at *len. */
static void put(char *out, size_t cap, size_t *len, const char *p, size_t n)
{
    if (out && *len < cap) {
        size_t k = cap - *len - 1 < n ? cap - *len - 1 : n;
        memcpy(out + *len, p, k);
        out[*len + k] = '\0';
    }
    *len += n;
}

size_t vt_range_stem(const char *name, char *out, size_t cap)
{
    if (out && cap)
        out[0] = '\0';
    size_t n = name ? strlen(name) : 0, k = n;
    if (vt_range_is_operator(name) || !n || !is_digit(name[n - 1]))
        return 0;
    while (k > 0 && is_digit(name[k - 1]))
        k--;
    while (k > 0 && strchr(VT_RANGE_SEPARATORS, name[k - 1]))
        k--;
    size_t len = 0;
    for (size_t i = 0; i < k;) {
        size_t j = i;
        while (j < k && is_digit(name[j]))
            j++;
        if (j > i) {
            put(out, cap, &len, VT_RANGE_NUMBER_MARK, strlen(VT_RANGE_NUMBER_MARK));
        } else {
            while (j < k && !is_digit(name[j]))
                j++;
            put(out, cap, &len, name + i, j - i);
        }
        i = j;
    }
    return len;
}

void vt_range_numbers(const char *name, uint64_t out[VT_RANGE_NUMBERS])
{
    memset(out, 0, VT_RANGE_NUMBERS * sizeof out[0]);
    int run = -1;
    for (const char *d = name ? name : ""; *d; d++) {
        if (!is_digit(*d))
            continue;
        if (d == name || !is_digit(d[-1])) {
            if (run == VT_RANGE_NUMBERS - 1) { /* keep the last runs: drop the first */
                memmove(out, out + 1, (VT_RANGE_NUMBERS - 1) * sizeof out[0]);
                out[run] = 0;
            } else {
                run++;
            }
        }
        uint64_t *v = &out[run];
        *v = *v > (UINT64_MAX - 9) / 10 ? UINT64_MAX : *v * 10 + (uint64_t)(*d - '0');
    }
}

int vt_range_numbers_cmp(const uint64_t a[VT_RANGE_NUMBERS], const uint64_t b[VT_RANGE_NUMBERS])
{
    for (int i = 0; i < VT_RANGE_NUMBERS; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}
