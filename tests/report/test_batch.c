/* test_batch.c: batch advice (batch.c): measured within one run, and across runs. */
#include "internal.h"
#include "report_test.h"

/* argv --batch 64, 100 MiB used outside the recording, 200 MiB of weights.
 * train_step 1 loads a 16 MiB input (batch 16 by the input ratio) and peaks
 * at 264 MiB; train_step 2 loads 64 MiB and fails: per sample
 * (264 - 200) / 16 = 4 MiB, largest batch (924 - 200) / 4 = 181. */
static void test_batch_measured(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"train", "--batch", "64"};
    open_trace(&g, "measured", 3, argv);
    vtg_meminfo(&g, 100, GiB - 100 * MiB, GiB);
    vtg_alloc(&g, 200, 0x10000000, 200 * MiB, 1);
    vtg_push(&g, 300, 1);
    vtg_alloc(&g, 301, 0x100000000, 16 * MiB, 1);
    for (uint64_t i = 0; i < 3; i++)
        vtg_alloc(&g, 302 + i, 0x200000000 + i * 16 * MiB, 16 * MiB, 1);
    vtg_free(&g, 310, 0x100000000);
    for (uint64_t i = 0; i < 3; i++)
        vtg_free(&g, 311 + i, 0x200000000 + i * 16 * MiB);
    vtg_pop(&g, 320);
    vtg_push(&g, 400, 1);
    vtg_alloc(&g, 401, 0x100000000, 64 * MiB, 1);
    for (uint64_t i = 0; i < 8; i++)
        vtg_alloc(&g, 402 + i, 0x200000000 + i * 64 * MiB, 64 * MiB, 1);
    vtg_failed(&g, 500, 256 * MiB, 1, 148 * MiB, GiB);
    vtg_end(&g, 600, 1);
    vr_report *r = close_and_analyze(&g, "measured");
    assert_int_equal(r->nooms, 1);
    const vr_oom *o = &r->ooms[0];
    assert_int_equal(o->verdict, VR_VERDICT_CAPACITY);
    assert_string_equal(o->batch_kind, "measured");
    assert_int_equal(o->batch_fixed_bytes, 200 * MiB);
    assert_int_equal(o->batch_per_sample_bytes, 4 * MiB);
    assert_int_equal(o->max_batch, 181);
    assert_non_null(strstr(o->explanation, "largest batch that fits is estimated at about 181 "
                                           "(from a completed step"));
    assert_non_null(strstr(o->explanation, "confirm it with a run: vramtrace run -o "
                                           "batch181.vtrace --"));
    char *json = render(vr_render_json, r);
    assert_non_null(strstr(json, "\"suggested_batch\":181,\"suggested_batch_kind\":\"measured\""));
    free(json);
    char *html = render(vr_render_html, r);
    assert_non_null(
        strstr(html, "class=\"batch measured\">estimated largest batch: about 181 (from"));
    free(html);
    char *text = render(vr_render_text, r);
    assert_non_null(strstr(text, "largest batch that fits is estimated at about 181"));
    free(text);
    vr_report_free(r);
}

/* The same on two devices, data parallel: device 1 holds a replica of the
 * weights and half of each step's activations. The advice for device 0,
 * where the failure is, is device 0's: (264 - 200) / 16 = 4 MiB a sample,
 * 181 again; the peak over both devices (512 MiB) said 37. */
static void test_batch_two_devices(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"train", "--batch", "64"};
    open_trace(&g, "measured2", 3, argv);
    vtg_device(&g, 0, "SimGPU", GiB);
    vtg_device(&g, 1, "SimGPU", GiB);
    vtg_meminfo(&g, 100, GiB - 100 * MiB, GiB);
    vtg_alloc(&g, 200, 0x10000000, 200 * MiB, 1);
    vtg_alloc_on(&g, 201, 0x90000000, 200 * MiB, 1, 1, VT_API_CUDA_MALLOC);
    vtg_push(&g, 300, 1);
    vtg_alloc(&g, 301, 0x100000000, 16 * MiB, 1);
    for (uint64_t i = 0; i < 3; i++) {
        vtg_alloc(&g, 302 + 2 * i, 0x200000000 + i * 16 * MiB, 16 * MiB, 1);
        vtg_alloc_on(&g, 303 + 2 * i, 0xa00000000 + i * 16 * MiB, 16 * MiB, 1, 1,
                     VT_API_CUDA_MALLOC);
    }
    vtg_free(&g, 310, 0x100000000);
    for (uint64_t i = 0; i < 3; i++) {
        vtg_free(&g, 311 + 2 * i, 0x200000000 + i * 16 * MiB);
        vtg_free(&g, 312 + 2 * i, 0xa00000000 + i * 16 * MiB);
    }
    vtg_pop(&g, 320);
    vtg_push(&g, 400, 1);
    vtg_alloc(&g, 401, 0x100000000, 64 * MiB, 1);
    for (uint64_t i = 0; i < 8; i++)
        vtg_alloc(&g, 402 + i, 0x200000000 + i * 64 * MiB, 64 * MiB, 1);
    vtg_failed(&g, 500, 256 * MiB, 1, 148 * MiB, GiB);
    vtg_end(&g, 600, 1);
    vr_report *r = close_and_analyze(&g, "measured2");
    assert_int_equal(r->nooms, 1);
    const vr_oom *o = &r->ooms[0];
    assert_int_equal(o->device, 0);
    assert_string_equal(o->batch_kind, "measured");
    assert_int_equal(o->batch_fixed_bytes, 200 * MiB);
    assert_int_equal(o->batch_per_sample_bytes, 4 * MiB);
    assert_int_equal(o->max_batch, 181);
    vr_report_free(r);
}

/* A program whose step needs BA_FIXED + BA_PER * batch bytes on a 1 GiB
 * device with 100 MiB used outside the recording: the largest batch that
 * fits is (usable - fixed) / per sample. */
#define BA_FIXED (200 * MiB)
#define BA_PER (4 * MiB)
#define BA_USABLE (GiB - 100 * MiB)
#define BA_TRUE ((int64_t)((BA_USABLE - BA_FIXED) / BA_PER))

static vr_report *batch_run(const char *program, int64_t batch)
{
    char name[64], arg[32];
    snprintf(name, sizeof name, "batch_%s_%lld", program, (long long)batch);
    snprintf(arg, sizeof arg, "%lld", (long long)batch);
    const char *path = tmp_path(name);
    const char *argv[] = {program, "--batch", arg};
    if (access(path, F_OK) != 0) {
        vtg g;
        assert_int_equal(vtg_open(&g, path, 3, argv), 0);
        vtg_stack(&g, 1, 0, 0x1100);
        vtg_device(&g, 0, "SimGPU", GiB);
        vtg_meminfo(&g, 100, GiB - 100 * MiB, GiB);
        vtg_alloc(&g, 200, 0x10000000, BA_FIXED, 1);
        uint64_t act = BA_PER * (uint64_t)batch;
        bool fits = BA_FIXED + act <= BA_USABLE;
        if (fits) {
            vtg_alloc(&g, 300, 0x100000000, act, 1);
            vtg_free(&g, 400, 0x100000000);
        } else {
            vtg_failed(&g, 300, act, 1, BA_USABLE - BA_FIXED, GiB);
        }
        vtg_end(&g, 500, fits ? 0 : 1);
        assert_int_equal(vtg_close(&g), 0);
    }
    char err[256] = "";
    vr_report *r = vr_analyze(path, NULL, err, sizeof err);
    if (!r)
        fail_msg("analyze %s: %s", name, err);
    return r;
}

static vr_batch_advice advise(const char *p1, int64_t b1, const char *p2, int64_t b2, bool *ok)
{
    static vr_report *keep[2]; /* freed by the next call */
    for (int i = 0; i < 2; i++)
        vr_report_free(keep[i]);
    keep[0] = batch_run(p1, b1);
    keep[1] = batch_run(p2, b2);
    vr_batch_advice a;
    *ok = vr_batch_advise(keep, 2, &a);
    return a;
}

static void test_batch_advice(void **state)
{
    (void)state;
    bool ok;
    /* one run that fits, one that fails: interpolated to the device */
    vr_batch_advice a = advise("train", BA_TRUE / 2, "train", BA_TRUE * 2, &ok);
    assert_true(ok);
    assert_string_equal(a.kind, "estimate");
    assert_int_equal(a.batch, BA_TRUE);
    assert_int_equal(a.fits, BA_TRUE / 2);
    assert_int_equal(a.fails, BA_TRUE * 2);
    assert_int_equal(a.next, BA_TRUE);
    assert_non_null(strstr(a.next_command, "vramtrace run -o batch"));
    assert_non_null(strstr(a.next_command, " train --batch "));
    /* two runs that fit: extrapolated from their step peaks */
    a = advise("train", BA_TRUE / 4, "train", BA_TRUE / 2, &ok);
    assert_string_equal(a.kind, "estimate");
    assert_int_equal(a.batch, BA_TRUE);
    /* the answer and the batch above it: measured */
    a = advise("train", BA_TRUE, "train", BA_TRUE + 1, &ok);
    assert_string_equal(a.kind, "measured");
    assert_int_equal(a.batch, BA_TRUE);
    assert_int_equal(a.next, -1);
    assert_string_equal(a.next_command, "");
    /* two failed runs: only an upper bound, worded as one, and a smaller run to record */
    a = advise("train", BA_TRUE * 2, "train", BA_TRUE * 3, &ok);
    assert_string_equal(a.kind, "upper_bound");
    assert_true(a.batch < BA_TRUE * 2);
    assert_non_null(strstr(a.text, "cannot fit"));
    assert_true(a.next > 0 && a.next < a.batch);
    /* another program's run is no point of this one: one run alone advises nothing */
    a = advise("train", BA_TRUE / 2, "other", BA_TRUE * 2, &ok);
    assert_false(ok);
    assert_string_equal(a.kind, "");
    advise("train", BA_TRUE / 2, "train", BA_TRUE / 2, &ok); /* e.g. two processes of a run */
    assert_false(ok);
    vr_report *one = batch_run("train", 10);
    assert_false(vr_batch_advise(&one, 1, &a));
    vr_report_free(one);
    advise("train", 1, "train", 1, &ok); /* frees the last pair */
}

/* Data parallel on two 1 GiB devices at --batch `batch`: the device `heavy`
 * needs BA_FIXED + BA_PER a sample, the other half of each, and fails when
 * that exceeds its usable bytes (device 0 has 100 MiB used outside the
 * recording, device 1 none). */
static void dp_write(const char *path, int heavy, int64_t batch, const char *arg)
{
    const char *argv[] = {"dp", "--batch", arg};
    vtg g;
    assert_int_equal(vtg_open(&g, path, 3, argv), 0);
    vtg_stack(&g, 1, 0, 0x1100);
    vtg_device(&g, 0, "SimGPU", GiB);
    vtg_device(&g, 1, "SimGPU", GiB);
    vtg_meminfo(&g, 100, GiB - 100 * MiB, GiB);
    uint64_t usable[2] = {GiB - 100 * MiB, GiB}, act = BA_PER * (uint64_t)batch;
    bool fits = BA_FIXED + act <= usable[heavy];
    for (int d = 0; d < 2; d++) {
        uint64_t share = d == heavy ? 1 : 2, base = 0x100000000ull * (uint64_t)(d + 1);
        vtg_alloc_on(&g, 200, base, BA_FIXED / share, 1, d, VT_API_CUDA_MALLOC);
        if (d == heavy && !fits)
            vtg_failed_on(&g, 300, act, 1, 2, d, VT_API_CUDA_MALLOC, usable[d] - BA_FIXED, GiB);
        else
            vtg_alloc_on(&g, 300, base + GiB / 2, act / share, 1, d, VT_API_CUDA_MALLOC);
    }
    if (fits) {
        vtg_free(&g, 400, 0x100000000ull + GiB / 2);
        vtg_free(&g, 401, 0x200000000ull + GiB / 2);
    }
    vtg_end(&g, 500, fits ? 0 : 1);
    assert_int_equal(vtg_close(&g), 0);
}

static vr_report *dp_run(int heavy, int64_t batch)
{
    char name[64], arg[32];
    snprintf(name, sizeof name, "dp_%d_%lld", heavy, (long long)batch);
    snprintf(arg, sizeof arg, "%lld", (long long)batch);
    const char *path = tmp_path(name);
    if (access(path, F_OK) != 0)
        dp_write(path, heavy, batch, arg);
    char err[256] = "";
    vr_report *r = vr_analyze(path, NULL, err, sizeof err);
    if (!r)
        fail_msg("analyze %s: %s", name, err);
    return r;
}

static vr_batch_advice dp_advise(int heavy, int64_t b1, int64_t b2)
{
    vr_report *r[2] = {dp_run(heavy, b1), dp_run(heavy, b2)};
    vr_batch_advice a;
    assert_true(vr_batch_advise(r, 2, &a));
    a.text = strdup(a.text); /* owned by r[0] */
    vr_report_free(r[0]);
    vr_report_free(r[1]);
    return a;
}

/* Across runs on two devices each device's need is weighed against its own
 * usable bytes: device 0 fills at (924 - 200) / 4 = 181, device 1 (no use
 * outside) at (1024 - 200) / 4 = 206. Both devices' peaks against one
 * device's room said 104. */
static void test_batch_advice_two_devices(void **state)
{
    (void)state;
    const int64_t truth[2] = {BA_TRUE, (int64_t)((GiB - BA_FIXED) / BA_PER)};
    for (int heavy = 0; heavy < 2; heavy++) {
        /* two completed runs: the first device to run out by their fit */
        vr_batch_advice a = dp_advise(heavy, truth[heavy] / 4, truth[heavy] / 2);
        assert_string_equal(a.kind, "estimate");
        assert_int_equal(a.batch, truth[heavy]);
        assert_int_equal(a.device, heavy);
        char want[32];
        snprintf(want, sizeof want, "reaches device %d at", heavy);
        assert_non_null(strstr(a.text, want));
        free((char *)a.text);
        /* one completed, one failed: the failing device's line */
        a = dp_advise(heavy, truth[heavy] / 2, truth[heavy] * 2);
        assert_string_equal(a.kind, "estimate");
        assert_int_equal(a.batch, truth[heavy]);
        assert_int_equal(a.device, heavy);
        free((char *)a.text);
        /* the answer and the batch above it */
        a = dp_advise(heavy, truth[heavy], truth[heavy] + 1);
        assert_string_equal(a.kind, "measured");
        assert_int_equal(a.batch, truth[heavy]);
        free((char *)a.text);
    }
}

/* The batch options of the usual training scripts (argparse's
 * --batch_size, Hugging Face's --per_device_train_batch_size, ...), read
 * and rewritten for the next run; other options with "batch" in their name
 * are not the batch. */
static void test_batch_options(void **state)
{
    (void)state;
    struct {
        const char *argv[4];
        int64_t batch;
        const char *next; /* the command for batch 12 */
    } cases[] = {
        {{"train", "--batch", "64"}, 64, "train --batch 12"},
        {{"train", "--batch-size=32"}, 32, "train --batch-size=12"},
        {{"train.py", "--batch_size", "16"}, 16, "train.py --batch_size 12"},
        {{"run_clm.py", "--per_device_train_batch_size=8"},
         8,
         "run_clm.py --per_device_train_batch_size=12"},
        {{"train.py", "--train_batch_size", "4"}, 4, "train.py --train_batch_size 12"},
        {{"train.py", "--batches", "5"}, -1, "train.py --batches 5"},
        {{"train.py", "--eval_batch_size", "5"}, -1, "train.py --eval_batch_size 5"},
        {{"train.py", "--batch_size", "x"}, -1, "train.py --batch_size 12"},
    };
    vr_arena *a = vr_arena_new();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t argc = 0;
        while (argc < 4 && cases[i].argv[argc])
            argc++;
        assert_int_equal(vr_argv_batch(cases[i].argv, argc), cases[i].batch);
        const char *cmd = vr_batch_command(a, cases[i].argv, argc, 12);
        const char *want = vr_sprintf(a, "vramtrace run -o batch12.vtrace -- %s", cases[i].next);
        if (strcmp(cmd, want))
            fail_msg("case %zu: \"%s\", want \"%s\"", i, cmd, want);
    }
    vr_arena_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_measured), cmocka_unit_test(test_batch_two_devices),
        cmocka_unit_test(test_batch_advice),   cmocka_unit_test(test_batch_advice_two_devices),
        cmocka_unit_test(test_batch_options),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
