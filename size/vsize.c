/* vsize.c: the size grammar and the size format (vsize.h). */
#include "vsize.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    uint64_t mult;
} units[] = {
    {"", 1},
    {"b", 1},
    {"kib", 1ull << 10},
    {"mib", 1ull << 20},
    {"gib", 1ull << 30},
    {"tib", 1ull << 40},
    {"pib", 1ull << 50},
    {"eib", 1ull << 60},
    {"k", 1ull << 10},
    {"m", 1ull << 20},
    {"g", 1ull << 30},
    {"t", 1ull << 40},
    {"kb", 1000ull},
    {"mb", 1000000ull},
    {"gb", 1000000000ull},
    {"tb", 1000000000000ull},
    {"pb", 1000000000000000ull},
    {"eb", 1000000000000000000ull},
};

/* A number's digits: whole part, and the fraction as num / den. */
typedef struct number {
    uint64_t whole, num, den;
    bool overflow;
} number;

static const char *skip_blanks(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return s;
}

/* DIGITS ["." DIGITS] | "." DIGITS at s; the end, or NULL when malformed.
 * Fraction digits past the 18th are ignored (they cannot change a byte). */
static const char *read_number(const char *s, number *n)
{
    const char *start = s;
    *n = (number){0, 0, 1, false};
    for (; isdigit((unsigned char)*s); s++)
        n->overflow |= __builtin_mul_overflow(n->whole, 10, &n->whole) ||
                       __builtin_add_overflow(n->whole, (uint64_t)(*s - '0'), &n->whole);
    if (*s != '.')
        return s > start ? s : NULL;
    const char *frac = ++s;
    for (; isdigit((unsigned char)*s); s++)
        if (s - frac < 18) {
            n->num = n->num * 10 + (uint64_t)(*s - '0');
            n->den *= 10;
        }
    return s > frac ? s : NULL;
}

/* The multiplier of the unit at s (letters only) and its end; 0 if unknown. */
static uint64_t read_unit(const char *s, const char **end)
{
    size_t n = 0;
    while (isalpha((unsigned char)s[n]))
        n++;
    *end = s + n;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strlen(units[i].name) == n && !strncasecmp(s, units[i].name, n))
            return units[i].mult;
    return 0;
}

int vsize_parse(const char *s, uint64_t *bytes)
{
    number n;
    if (!s || !*(s = skip_blanks(s)))
        return VSIZE_EMPTY;
    if (!(s = read_number(s, &n)))
        return VSIZE_NUMBER;
    uint64_t mult = read_unit(skip_blanks(s), &s);
    if (!mult || *skip_blanks(s))
        return VSIZE_UNIT;
    if (mult == 1 && n.num)
        return VSIZE_FRACTION;
    uint64_t whole, part;
    /* num / den of a unit, rounded half up (den <= 1e18, mult <= 2^60: 128 bits hold it). */
    unsigned __int128 f =
        ((unsigned __int128)n.num * mult * 2 + n.den) / (2 * (unsigned __int128)n.den);
    part = (uint64_t)f;
    if (n.overflow || __builtin_mul_overflow(n.whole, mult, &whole) ||
        __builtin_add_overflow(whole, part, &whole))
        return VSIZE_RANGE;
    *bytes = whole;
    return VSIZE_OK;
}

const char *vsize_strerror(int err)
{
    switch (err) {
    case VSIZE_OK:
        return "ok";
    case VSIZE_EMPTY:
        return "empty";
    case VSIZE_NUMBER:
        return "not a number";
    case VSIZE_UNIT:
        return "unknown unit (" VSIZE_UNITS ")";
    case VSIZE_FRACTION:
        return "a fraction of a byte";
    case VSIZE_RANGE:
        return "too large (more than 2^64 - 1 bytes)";
    default:
        return "bad size";
    }
}

const char *vsize_format(uint64_t bytes, char *buf, size_t len)
{
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes / 1024.0;
    size_t i = 1;
    /* 1023.995 and above print as 1024.00: the next unit's 1.00 instead. */
    while (v >= 1023.995 && i + 1 < sizeof u / sizeof u[0]) {
        v /= 1024.0;
        i++;
    }
    snprintf(buf, len, "%.2f %s", v, u[i]);
    return buf;
}

const char *vsize_plural(uint64_t n)
{
    return n == 1 ? "" : "s";
}
