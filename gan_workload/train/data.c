/* data.c — Fashion-MNIST IDX loading (zlib), synthetic images, resizing, random numbers. */
#include "train.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define FASHION_MNIST_PACKAGE "dataset-fashion-mnist"
#define TRAIN_IMAGES "train-images-idx3-ubyte.gz"

void tr_rng_seed(tr_rng *r, uint64_t seed)
{
    r->s = seed;
    r->has_spare = false;
    r->spare = 0;
}

/* splitmix64 (Steele, Lea, Flood 2014). */
uint64_t tr_rng_u64(tr_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double tr_rng_uniform(tr_rng *r)
{
    return (double)(tr_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}

double tr_rng_normal(tr_rng *r)
{
    if (r->has_spare) {
        r->has_spare = false;
        return r->spare;
    }
    double u1 = tr_rng_uniform(r), u2 = tr_rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    double m = sqrt(-2.0 * log(u1));
    r->spare = m * sin(2.0 * M_PI * u2);
    r->has_spare = true;
    return m * cos(2.0 * M_PI * u2);
}

static int read_exact(gzFile g, void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n > 0) {
        unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
        int got = gzread(g, p, chunk);
        if (got <= 0)
            return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

static uint32_t be32(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static int read_idx3(tr_dataset *d, gzFile g, const char *path, char *err, size_t err_size)
{
    uint8_t hdr[16];
    if (read_exact(g, hdr, sizeof hdr) != 0) {
        snprintf(err, err_size, "%s: truncated or not gzip IDX data", path);
        return -1;
    }
    uint32_t magic = be32(hdr), count = be32(hdr + 4), rows = be32(hdr + 8), cols = be32(hdr + 12);
    if (magic != 0x803 || count == 0 || count > 10000000 || rows == 0 || rows > 4096 || cols == 0 ||
        cols > 4096) {
        snprintf(err, err_size, "%s: not an IDX3 uint8 image file (magic 0x%x)", path, magic);
        return -1;
    }
    size_t bytes = (size_t)count * rows * cols;
    d->pixels = malloc(bytes);
    if (!d->pixels) {
        snprintf(err, err_size, "%s: out of host memory for %zu bytes", path, bytes);
        return -1;
    }
    if (read_exact(g, d->pixels, bytes) != 0) {
        free(d->pixels);
        d->pixels = NULL;
        snprintf(err, err_size, "%s: truncated: expected %u images of %ux%u", path, count, rows,
                 cols);
        return -1;
    }
    d->count = (int)count;
    d->rows = (int)rows;
    d->cols = (int)cols;
    return 0;
}

int tr_dataset_load_idx(tr_dataset *d, const char *path, char *err, size_t err_size)
{
    memset(d, 0, sizeof *d);
    gzFile g = gzopen(path, "rb");
    if (!g) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno ? errno : ENOENT));
        return -1;
    }
    int rc = read_idx3(d, g, path, err, err_size);
    gzclose(g);
    return rc;
}

int tr_dataset_load_fashion_mnist(tr_dataset *d, const char *dir, char *err, size_t err_size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, TRAIN_IMAGES);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_size,
                 "Fashion-MNIST not found: cannot open %s (%s). Install the Debian package %s "
                 "(apt-get install %s) or point --data-dir at a folder holding %s",
                 path, strerror(errno), FASHION_MNIST_PACKAGE, FASHION_MNIST_PACKAGE, TRAIN_IMAGES);
        return -1;
    }
    fclose(f);
    return tr_dataset_load_idx(d, path, err, err_size);
}

static void draw_ellipse(uint8_t *img, int rows, int cols, tr_rng *r)
{
    double cx = 8 + tr_rng_uniform(r) * (cols - 16), cy = 8 + tr_rng_uniform(r) * (rows - 16);
    double ax = 3 + tr_rng_uniform(r) * 6, ay = 3 + tr_rng_uniform(r) * 6;
    int level = 128 + (int)(tr_rng_uniform(r) * 127);
    for (int y = 0; y < rows; y++)
        for (int x = 0; x < cols; x++) {
            double dx = (x - cx) / ax, dy = (y - cy) / ay;
            img[y * cols + x] = dx * dx + dy * dy <= 1.0 ? (uint8_t)level : 0;
        }
}

int tr_dataset_synthetic(tr_dataset *d, int count, uint64_t seed)
{
    memset(d, 0, sizeof *d);
    d->pixels = malloc((size_t)count * 28 * 28);
    if (!d->pixels)
        return -1;
    d->count = count;
    d->rows = d->cols = 28;
    tr_rng r;
    tr_rng_seed(&r, seed ^ 0x5eed5eedULL);
    for (int i = 0; i < count; i++)
        draw_ellipse(d->pixels + (size_t)i * 28 * 28, 28, 28, &r);
    return 0;
}

void tr_dataset_free(tr_dataset *d)
{
    free(d->pixels);
    memset(d, 0, sizeof *d);
}

/* Source coordinate and weights of output index o for a resize from n_in to n_out with
 * half-pixel centres (align_corners=False), clamped at the border. */
static void bilinear_coord(int o, int n_in, int n_out, int *i0, int *i1, float *w1)
{
    float src = ((float)o + 0.5f) * (float)n_in / (float)n_out - 0.5f;
    if (src < 0)
        src = 0;
    int lo = (int)src;
    if (lo > n_in - 1)
        lo = n_in - 1;
    *i0 = lo;
    *i1 = lo + 1 < n_in ? lo + 1 : n_in - 1;
    *w1 = src - (float)lo;
}

void tr_dataset_image(const tr_dataset *d, int index, int size, int channels, float *out)
{
    const uint8_t *img = d->pixels + (size_t)index * d->rows * d->cols;
    for (int y = 0; y < size; y++) {
        int y0, y1;
        float wy;
        bilinear_coord(y, d->rows, size, &y0, &y1, &wy);
        for (int x = 0; x < size; x++) {
            int x0, x1;
            float wx;
            bilinear_coord(x, d->cols, size, &x0, &x1, &wx);
            float top = img[y0 * d->cols + x0] * (1 - wx) + img[y0 * d->cols + x1] * wx;
            float bot = img[y1 * d->cols + x0] * (1 - wx) + img[y1 * d->cols + x1] * wx;
            float v = (top * (1 - wy) + bot * wy) / 255.0f * 2.0f - 1.0f;
            for (int c = 0; c < channels; c++)
                out[((size_t)c * size + y) * size + x] = v;
        }
    }
}
