/* vsize.h: the one grammar of byte sizes ("512MiB", "1.5GiB", "16g", "4096")
 * and the one way sizes are printed ("1.50 GiB"), shared by every part of
 * vramtrace that reads or shows a size: the preload's messages, the report,
 * the vramtrace command's limits and the simulated device's environment
 * (docs/architecture.md, "Shared contracts"). It depends on nothing but the C
 * library, so that sim/, which knows nothing of vramtrace, may link it too.
 *
 * Grammar (case-insensitive; blanks allowed around the number and the unit):
 *   SIZE   = NUMBER [UNIT]
 *   NUMBER = DIGITS ["." DIGITS] | "." DIGITS   (no sign, exponent or hex)
 *   UNIT   = "B"                               bytes (the default)
 *          | "KiB" | "MiB" | "GiB" | "TiB" | "PiB" | "EiB"   1024-based (IEC 80000-13)
 *          | "K" | "M" | "G" | "T"             1024-based, as ulimit and docker read them
 *          | "KB" | "MB" | "GB" | "TB" | "PB" | "EB"         1000-based (SI)
 * (no single-letter P or E: "1e3" is refused, never read as 1 EiB).
 * A fraction is allowed with a unit above a byte and rounds to the nearest
 * byte ("1.5KiB" = 1536, "0.3GiB" = 322122547); a fraction of a byte
 * ("1.5", "2.5B") and anything above 2^64 - 1 bytes are refused. */
#ifndef VRAMTRACE_VSIZE_H
#define VRAMTRACE_VSIZE_H

#include <stddef.h>
#include <stdint.h>

/* The units, as help texts and vsize_strerror name them. */
#define VSIZE_UNITS_1024 "B, KiB, MiB, GiB, TiB, PiB, EiB, K, M, G, T (1024-based)"
#define VSIZE_UNITS_1000 "KB, MB, GB, TB, PB, EB (1000-based)"
#define VSIZE_UNITS VSIZE_UNITS_1024 " or " VSIZE_UNITS_1000
/* What to show after a refused size, e.g. "bad size 'x' (e.g. ...)". */
#define VSIZE_EXAMPLES "e.g. 512MiB, 1.5GiB, 16g, 100MB or 4096"

/* Why a size was refused (vsize_parse's negative results). */
enum vsize_error {
    VSIZE_OK = 0,
    VSIZE_EMPTY = -1,    /* NULL, empty or blank */
    VSIZE_NUMBER = -2,   /* no number where one must start, or a malformed one */
    VSIZE_UNIT = -3,     /* an unknown unit, or text after the unit */
    VSIZE_FRACTION = -4, /* a fraction of a byte */
    VSIZE_RANGE = -5,    /* more than 2^64 - 1 bytes */
};

/* Parse s by the grammar above into *bytes (untouched on error).
 * Returns VSIZE_OK (0) or a negative enum vsize_error. */
int vsize_parse(const char *s, uint64_t *bytes);

/* A short English reason for a vsize_parse result ("unknown unit"). */
const char *vsize_strerror(int err);

/* Longest text vsize_format writes, with its NUL ("18446744073709551615 B"). */
#define VSIZE_LEN 24

/* bytes as text into buf (len bytes, VSIZE_LEN is enough): below 1 KiB the
 * exact count ("1023 B"), else two decimals of the largest 1024-based unit
 * that keeps the number below 1024 after rounding ("1.50 GiB", "1.00 MiB"
 * for 1048575, never "1024.00 KiB"). Returns buf. */
const char *vsize_format(uint64_t bytes, char *buf, size_t len);

/* The plural ending of a count of things printed beside a size: "s" unless
 * n is 1 ("1 allocation", "2 allocations", "0 frames"). The one rule of the
 * preload's messages and the report's text. */
const char *vsize_plural(uint64_t n);

#endif
