/* test_runname: the run naming rule of trace/runname.c (vtrace.h, "Run
 * naming"), the run id and rank helpers, and the header's run fields. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "records.h"
#include "vtrace.h"

static void expand(void **state)
{
    char out[64];
    (void)state;
    assert_int_equal(vt_name_expand("t.%p.%h.%%.vtrace", 42, "box", out, sizeof out), 0);
    assert_string_equal(out, "t.42.box.%.vtrace");
    assert_int_equal(vt_name_expand("t.%q.vtrace", 42, "box", out, sizeof out), -1);
    assert_int_equal(vt_name_expand("t.%", 42, "box", out, sizeof out), -1);
    assert_int_equal(vt_name_expand("", 42, "box", out, sizeof out), -1);
    assert_int_equal(vt_name_expand("%h%h%h%h%h%h%h%h", 1, "0123456789", out, sizeof out), -1);
}

/* Whether a pattern gives each process its own name, by the same rule. */
static void has_pid(void **state)
{
    (void)state;
    assert_true(vt_name_has_pid("t.%p.vtrace"));
    assert_true(vt_name_has_pid("%h/%%%p"));
    assert_false(vt_name_has_pid("t.%%p.vtrace")); /* a literal "%p" */
    assert_false(vt_name_has_pid("t.%h.vtrace"));
    assert_false(vt_name_has_pid("t.%"));
    assert_false(vt_name_has_pid(""));
    assert_false(vt_name_has_pid(NULL));
    char out[64];
    assert_int_equal(vt_name_expand("t.%%p.vtrace", 42, "box", out, sizeof out), 0);
    assert_string_equal(out, "t.%p.vtrace"); /* agrees: no pid in the name */
}

static void names(void **state)
{
    char out[64];
    (void)state;
    assert_int_equal(vt_name_default("train", 7, 0, out, sizeof out), 0);
    assert_string_equal(out, "vramtrace.train.7.vtrace");
    assert_int_equal(vt_name_default("train", 7, 2, out, sizeof out), 0);
    assert_string_equal(out, "vramtrace.train.7.2.vtrace");
    assert_int_equal(vt_name_with_pid("a.vtrace", 99, 0, out, sizeof out), 0);
    assert_string_equal(out, "a.99.vtrace");
    assert_int_equal(vt_name_with_pid("d.x/a.b.vtrace", 99, 3, out, sizeof out), 0);
    assert_string_equal(out, "d.x/a.b.99.3.vtrace");
    assert_int_equal(vt_name_with_pid("d.x/trace", 5, 0, out, sizeof out), 0);
    assert_string_equal(out, "d.x/trace.5");
    assert_int_equal(vt_name_with_pid(".hidden", 5, 0, out, sizeof out), 0);
    assert_string_equal(out, ".hidden.5");
    assert_int_equal(vt_name_with_pid("a.vtrace", 99, 0, out, 8), -1);
}

static void siblings(void **state)
{
    (void)state;
    assert_true(vt_name_is_sibling("a.vtrace", "a.123.vtrace"));
    assert_true(vt_name_is_sibling("d/a.vtrace", "d/a.123.4.vtrace"));
    assert_false(vt_name_is_sibling("a.vtrace", "a.vtrace"));
    assert_false(vt_name_is_sibling("a.vtrace", "ab.123.vtrace"));
    assert_false(vt_name_is_sibling("a.vtrace", "a.x12.vtrace"));
    assert_false(vt_name_is_sibling("a.vtrace", "a.123.json"));
    assert_false(vt_name_is_sibling("a.vtrace", "a.1.2.3.vtrace"));
}

static void run_ids(void **state)
{
    char a[VT_RUN_ID_LEN + 1], b[VT_RUN_ID_LEN + 1];
    (void)state;
    assert_int_equal(vt_run_id_new(a), 0);
    assert_int_equal(vt_run_id_new(b), 0);
    assert_true(vt_run_id_valid(a));
    assert_string_not_equal(a, b);
    assert_false(vt_run_id_valid("0123"));
    assert_false(vt_run_id_valid("0123456789ABCDEF"));
    assert_false(vt_run_id_valid(NULL));
}

static void ranks(void **state)
{
    (void)state;
    unsetenv("RANK");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("PMI_RANK");
    unsetenv("SLURM_PROCID");
    assert_int_equal(vt_rank_from_env(), -1);
    setenv("PMI_RANK", "3", 1);
    assert_int_equal(vt_rank_from_env(), 3);
    setenv("RANK", "x", 1);
    assert_int_equal(vt_rank_from_env(), 3);
    setenv("RANK", "1", 1);
    assert_int_equal(vt_rank_from_env(), 1);
}

static void header_fields(void **state)
{
    vt_header h = {.pid = 5, .host = "h", .program = "p", .vramtrace_version = "v"};
    vt_header_store hs;
    size_t len;
    char err[128];
    (void)state;
    h.run_id = "0123456789abcdef";
    h.ppid = 4;
    h.has_rank = true;
    h.rank = 0;
    uint8_t *buf = vt_header_encode(&h, &len);
    assert_non_null(buf);
    assert_int_equal(
        vt_header_decode(buf + VT_FILE_PREFIX_LEN, len - VT_FILE_PREFIX_LEN, &hs, err, sizeof err),
        0);
    assert_string_equal(hs.h.run_id, "0123456789abcdef");
    assert_int_equal(hs.h.ppid, 4);
    assert_true(hs.h.has_rank);
    assert_int_equal(hs.h.rank, 0);
    vt_header_store_free(&hs);
    free(buf);
    h.run_id = NULL;
    h.has_rank = false;
    buf = vt_header_encode(&h, &len);
    assert_int_equal(
        vt_header_decode(buf + VT_FILE_PREFIX_LEN, len - VT_FILE_PREFIX_LEN, &hs, err, sizeof err),
        0);
    assert_string_equal(hs.h.run_id, "");
    assert_false(hs.h.has_rank);
    vt_header_store_free(&hs);
    free(buf);
}

/* NVTX range names numbered by step (vt_range_stem): the stem ("" for a
 * name not numbered) and its length. */
static void range_stems(void **state)
{
    (void)state;
    struct {
        const char *name, *stem;
    } cases[] = {
        {"iteration12", "iteration"},
        {"iteration0", "iteration"},
        {"epoch 3", "epoch"},
        {"step_12", "step"},
        {"layer.11", "layer"},
        {"batch#7", "batch"},
        {"iter=3", "iter"},
        {"train_step", ""},
        {"conv2d", ""},
        {"42", ""},
        {"_7", ""},
        {"", ""},
        {"a1b2", "a<N>b"},
        {"step", ""},
        {"G2.forward", ""},
        {"step[3]", ""},
        /* several numbers, the last one the step's */
        {"epoch 1 step 12", "epoch <N> step"},
        {"step 12/100", "step <N>"},
        {"layer1.conv2", "layer<N>.conv"},
        {"rank 0: iteration 7", "rank <N>: iteration"},
        /* PyTorch's emit_nvtx() operator ranges: numbered by operator, not step */
        {"aten::empty, op_id = 10", ""},
        {"aten::add, seq = 3", ""},
        {"aten::mm, seq = 7, op_id = 21, sizes = [[2, 3], [3, 4]]", ""},
        {"aten::relu, op_id = 5, input_op_ids = [4]", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char stem[64];
        size_t got = vt_range_stem(cases[i].name, stem, sizeof stem);
        if (got != strlen(cases[i].stem) || strcmp(stem, cases[i].stem))
            fail_msg("%s: stem \"%s\" (%zu), want \"%s\"", cases[i].name, stem, got, cases[i].stem);
        if (vt_range_stem(cases[i].name, NULL, 0) != got)
            fail_msg("%s: the length without a buffer differs", cases[i].name);
    }
    assert_int_equal(vt_range_stem(NULL, NULL, 0), 0);
    /* a short buffer: truncated, the whole length returned */
    char small[7];
    assert_int_equal(vt_range_stem("epoch 1 step 12", small, sizeof small), 14);
    assert_string_equal(small, "epoch ");
}

/* The numbers of a numbered name, compared first to last. */
static void range_numbers(void **state)
{
    (void)state;
    uint64_t a[VT_RANGE_NUMBERS], b[VT_RANGE_NUMBERS];
    vt_range_numbers("epoch 1 step 12", a);
    assert_true(a[0] == 1 && a[1] == 12 && a[2] == 0 && a[3] == 0);
    vt_range_numbers("epoch 0 step 99", b);
    assert_true(vt_range_numbers_cmp(b, a) < 0 && vt_range_numbers_cmp(a, b) > 0);
    vt_range_numbers("epoch 1 step 12", b);
    assert_int_equal(vt_range_numbers_cmp(a, b), 0);
    vt_range_numbers("iteration99999999999999999999999", a);
    assert_true(a[0] == UINT64_MAX);
    /* the last runs: a static prefix of many numbers leaves the step's */
    vt_range_numbers("1 2 3 4 5", a);
    assert_true(a[0] == 2 && a[3] == 5);
    vt_range_numbers("v2 bs64 lr3e4 step 7", a);
    vt_range_numbers("v2 bs64 lr3e4 step 8", b);
    assert_true(vt_range_numbers_cmp(a, b) < 0);
    vt_range_numbers(NULL, a);
    assert_true(a[0] == 0);
}

/* PyTorch's operator ranges (vt_range_is_operator), by their fields. */
static void operator_ranges(void **state)
{
    (void)state;
    assert_true(vt_range_is_operator("aten::empty, op_id = 10"));
    assert_true(vt_range_is_operator("aten::add, seq = 3"));
    assert_true(vt_range_is_operator("aten::mm, sizes = [[2, 3], [3, 4]]"));
    assert_true(vt_range_is_operator("aten::relu, input_op_ids = [4]"));
    assert_false(vt_range_is_operator("step 12"));
    assert_false(vt_range_is_operator("aten::empty")); /* no field: cannot tell */
    assert_false(vt_range_is_operator("op_id = 3"));
    assert_false(vt_range_is_operator("train, seq=3"));
    assert_false(vt_range_is_operator(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(expand),        cmocka_unit_test(has_pid),
        cmocka_unit_test(names),         cmocka_unit_test(siblings),
        cmocka_unit_test(run_ids),       cmocka_unit_test(ranks),
        cmocka_unit_test(header_fields), cmocka_unit_test(range_stems),
        cmocka_unit_test(range_numbers), cmocka_unit_test(operator_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
