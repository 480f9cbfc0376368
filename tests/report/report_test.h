/* report_test.h: what the report's unit tests (test_*.c here) share: a
 * temporary directory per test program, the synthetic scenarios of gen.c
 * analyzed through the public API (report.h), rendering into memory, and a
 * JSON syntax check. Each test program runs its tests as one cmocka group
 * with vrt_setup / vrt_teardown. */
#ifndef VRAMTRACE_REPORT_TEST_H
#define VRAMTRACE_REPORT_TEST_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "gen.h"
#include "report.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* cmocka group fixtures: create the temporary directory / remove it with
 * everything in it. Return 0, or -1 (the group fails). */
int vrt_setup(void **state);
int vrt_teardown(void **state);

/* DIR/name.vtrace in the temporary directory (a static buffer, overwritten
 * by the next call). */
const char *tmp_path(const char *name);
/* gen.c's scenario `name` (written once per program), analyzed with
 * symbols; fails the test when it cannot be. Free with vr_report_free. */
vr_report *scenario(const char *name);
/* What renderer fn writes for r alone, as a malloc'ed string. */
char *render(int (*fn)(FILE *, vr_report *const *, size_t, const vr_options *), vr_report *r);
/* What fn writes for the two reports r[0], r[1] (a diff), as a malloc'ed
 * string. */
char *render_pair(int (*fn)(FILE *, vr_report *const *, size_t, const vr_options *),
                  vr_report *const *r);
/* The same with its length in *len (binary outputs may hold NUL bytes). */
char *render_len(int (*fn)(FILE *, vr_report *const *, size_t, const vr_options *), vr_report *r,
                 size_t *len);
/* A new trace `name` (argv in its header), prelude: stack 1 (ip 0x1100),
 * string 1 "train_step", device 0 "SimGPU" of 1 GiB. */
void open_trace(vtg *g, const char *name, int argc, const char *const *argv);
/* Two call chains of depth frames (at most 20; ips 0x10000 + 0x100 x frame
 * index, the innermost frame index 0) that part at frame index part only
 * (the second chain's ip there 0x10 higher). The first chain's leaf stack
 * id is returned; the second's is 20 more. */
uint32_t two_chains(vtg *g, uint32_t depth, size_t part);
/* open_trace for steps (NVTX ranges named by string 1), with a memory
 * sample of the whole device free (at 1 ns) and stacks 5 (ip 0x5500) and 7
 * (ip 0x7700). */
void open_steps(vtg *g, const char *name);
/* Close g and analyze trace `name` without symbols; fails the test when it
 * cannot be. */
vr_report *close_and_analyze(vtg *g, const char *name);
/* The part of text from the first occurrence of from up to to (or the end),
 * malloc'ed; fails the test when from is missing. */
char *slice(const char *text, const char *from, const char *to);
/* Fails the test unless text is one JSON value (RFC 8259 grammar, no
 * semantics) and nothing else but white space. */
void assert_json(const char *text);
#endif
