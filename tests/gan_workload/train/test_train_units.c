/* Unit tests of the trainer's host parts: options, IDX loading, resizing, PNG grid, RNG. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "train.h"

static int parse(tr_options *o, const char *const *args, int n)
{
    char *argv[32];
    argv[0] = "train";
    for (int i = 0; i < n; i++)
        argv[i + 1] = (char *)args[i];
    FILE *null = fopen("/dev/null", "w");
    int rc = tr_options_parse(o, n + 1, argv, null, null);
    fclose(null);
    return rc;
}

static void cli_defaults(void **state)
{
    (void)state;
    tr_options o;
    assert_int_equal(parse(&o, NULL, 0), 0);
    assert_int_equal(o.image_size, 32);
    assert_int_equal(o.batch, 64);
    assert_int_equal(o.channels, 1);
    assert_int_equal(o.nz, 100);
    assert_int_equal(o.ngf, 64);
    assert_int_equal(o.allocator, GA_CACHING);
    assert_false(o.memory_only);
    assert_int_equal(o.n_vary, 0);
}

static void cli_flags(void **state)
{
    (void)state;
    tr_options o;
    const char *a[] = {"--batch",
                       "1024",
                       "--image-size",
                       "256",
                       "--memory-only",
                       "--fp16",
                       "--checkpoint",
                       "--accum-steps",
                       "4",
                       "--allocator",
                       "direct",
                       "--vary-batch=8,16,24",
                       "--channels",
                       "3",
                       "--alloc-log",
                       "x.log"};
    assert_int_equal(parse(&o, a, 16), 0);
    assert_int_equal(o.batch, 1024);
    assert_int_equal(o.image_size, 256);
    assert_true(o.memory_only && o.fp16 && o.checkpoint);
    assert_int_equal(o.accum_steps, 4);
    assert_int_equal(o.allocator, GA_DIRECT);
    assert_int_equal(o.n_vary, 3);
    assert_int_equal(o.vary_batch[2], 24);
    assert_int_equal(o.channels, 3);
    assert_string_equal(o.alloc_log, "x.log");
    const char *v[] = {"--batch", "64", "--vary-batch"};
    assert_int_equal(parse(&o, v, 3), 0);
    assert_true(o.n_vary > 3);
    for (int i = 0; i < o.n_vary; i++)
        assert_true(o.vary_batch[i] >= 1 && o.vary_batch[i] <= 64);
}

static void cli_bad_values(void **state)
{
    (void)state;
    tr_options o;
    const char *bad[][2] = {{"--image-size", "48"}, {"--image-size", "512"}, {"--batch", "0"},
                            {"--batch", "12x"},     {"--channels", "2"},     {"--lr", "-1"},
                            {"--backend", "tpu"},   {"--allocator", "x"},    {"--steps", ""},
                            {"--accum-steps", "0"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(parse(&o, bad[i], 2), -1);
    const char *unknown[] = {"--frobnicate"};
    assert_int_equal(parse(&o, unknown, 1), -1);
    const char *help[] = {"--help"};
    assert_int_equal(parse(&o, help, 1), 1);
}

/* Writes a gzip IDX3 file of `count` rows x cols images, pixel = (i + y + x) & 255. */
static void write_idx(const char *path, int count, int rows, int cols, uint32_t magic)
{
    gzFile g = gzopen(path, "wb");
    assert_non_null(g);
    uint32_t hdr[4] = {magic, (uint32_t)count, (uint32_t)rows, (uint32_t)cols};
    for (int i = 0; i < 4; i++) {
        uint8_t b[4] = {hdr[i] >> 24, hdr[i] >> 16, hdr[i] >> 8, hdr[i]};
        gzwrite(g, b, 4);
    }
    for (int i = 0; i < count; i++)
        for (int p = 0; p < rows * cols; p++) {
            uint8_t v = (uint8_t)(i + p / cols + p % cols);
            gzwrite(g, &v, 1);
        }
    gzclose(g);
}

static void idx_round_trip(void **state)
{
    (void)state;
    char path[] = "/tmp/test_train_idx_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_idx(path, 5, 28, 28, 0x803);
    tr_dataset d;
    char err[512];
    assert_int_equal(tr_dataset_load_idx(&d, path, err, sizeof err), 0);
    assert_int_equal(d.count, 5);
    assert_int_equal(d.rows, 28);
    assert_int_equal(d.pixels[3 * 784 + 2 * 28 + 1], 3 + 2 + 1);
    tr_dataset_free(&d);
    write_idx(path, 5, 28, 28, 0x801);
    assert_int_equal(tr_dataset_load_idx(&d, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "IDX3"));
    unlink(path);
}

static void missing_data_names_package(void **state)
{
    (void)state;
    tr_dataset d;
    char err[1024];
    assert_int_equal(tr_dataset_load_fashion_mnist(&d, "/nonexistent/dir", err, sizeof err), -1);
    assert_non_null(strstr(err, "dataset-fashion-mnist"));
    assert_non_null(strstr(err, "--data-dir"));
}

static void resize_keeps_range_and_constants(void **state)
{
    (void)state;
    tr_dataset d;
    assert_int_equal(tr_dataset_synthetic(&d, 3, 42), 0);
    memset(d.pixels, 255, 784); /* image 0 all white */
    float *out = malloc(3 * 64 * 64 * sizeof *out);
    tr_dataset_image(&d, 0, 64, 3, out);
    for (int i = 0; i < 3 * 64 * 64; i++)
        assert_float_equal(out[i], 1.0f, 1e-6);
    tr_dataset_image(&d, 1, 32, 3, out);
    float lo = 1, hi = -1;
    for (int i = 0; i < 3 * 32 * 32; i++) {
        lo = fminf(lo, out[i]);
        hi = fmaxf(hi, out[i]);
        assert_float_equal(out[i], out[i % (32 * 32)], 0); /* channels replicated */
    }
    assert_float_equal(lo, -1.0f, 1e-6); /* the background */
    assert_true(hi > 0.0f && hi <= 1.0f);
    free(out);
    tr_dataset_free(&d);
}

static void png_grid_reads_back(void **state)
{
    (void)state;
    const int n = 64, s = 32;
    float *img = malloc((size_t)n * s * s * sizeof *img);
    for (int i = 0; i < n * s * s; i++)
        img[i] = (i / (s * s)) % 2 ? 1.0f : -1.0f; /* odd images white */
    char path[] = "/tmp/test_train_png_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    char err[256];
    assert_int_equal(tr_png_write_grid(path, img, n, 1, s, err, sizeof err), 0);
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    assert_true(png_image_begin_read_from_file(&pi, path));
    assert_int_equal(pi.width, 2 + 8 * (s + 2));
    assert_int_equal(pi.height, 2 + 8 * (s + 2));
    pi.format = PNG_FORMAT_GRAY;
    uint8_t *buf = malloc(PNG_IMAGE_SIZE(pi));
    assert_true(png_image_finish_read(&pi, NULL, buf, 0, NULL));
    assert_int_equal(buf[(2 + 5) * pi.width + (2 + s + 2) + 5], 255); /* image 1 */
    assert_int_equal(buf[(2 + 5) * pi.width + 2 + 5], 0);             /* image 0 */
    free(buf);
    free(img);
    unlink(path);
}

static void rng_is_deterministic(void **state)
{
    (void)state;
    tr_rng a, b;
    tr_rng_seed(&a, 7);
    tr_rng_seed(&b, 7);
    double sum = 0, sq = 0;
    for (int i = 0; i < 20000; i++) {
        double x = tr_rng_normal(&a);
        assert_true(x == tr_rng_normal(&b));
        sum += x;
        sq += x * x;
    }
    assert_true(fabs(sum / 20000) < 0.05);
    assert_true(fabs(sq / 20000 - 1.0) < 0.05);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cli_defaults),
        cmocka_unit_test(cli_flags),
        cmocka_unit_test(cli_bad_values),
        cmocka_unit_test(idx_round_trip),
        cmocka_unit_test(missing_data_names_package),
        cmocka_unit_test(resize_keeps_range_and_constants),
        cmocka_unit_test(png_grid_reads_back),
        cmocka_unit_test(rng_is_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
