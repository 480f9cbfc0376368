/* png_grid.c — an 8-column grid of generated images written with libpng. */
#include "train.h"

#include <errno.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>

enum { GRID_COLS = 8, GRID_PAD = 2 };

static uint8_t to_byte(float v)
{
    float x = (v + 1.0f) * 0.5f * 255.0f + 0.5f;
    if (!(x > 0.0f)) /* also NaN */
        return 0;
    return x >= 255.0f ? 255 : (uint8_t)x;
}

/* Renders the grid into rgb (height x width x channels bytes, zero-initialised). */
static void render(uint8_t *pix, int width, const float *images, int count, int channels, int size)
{
    for (int i = 0; i < count; i++) {
        int gx = GRID_PAD + (i % GRID_COLS) * (size + GRID_PAD);
        int gy = GRID_PAD + (i / GRID_COLS) * (size + GRID_PAD);
        const float *img = images + (size_t)i * channels * size * size;
        for (int c = 0; c < channels; c++)
            for (int y = 0; y < size; y++)
                for (int x = 0; x < size; x++) {
                    size_t at = ((size_t)(gy + y) * width + gx + x) * channels + c;
                    pix[at] = to_byte(img[((size_t)c * size + y) * size + x]);
                }
    }
}

static int write_png(FILE *f, const uint8_t *pix, int width, int height, int channels)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8,
                 channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < height; y++)
        png_write_row(png, (png_const_bytep)(pix + (size_t)y * width * channels));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return 0;
}

int tr_png_write_grid(const char *path, const float *images, int count, int channels, int size,
                      char *err, size_t err_size)
{
    if (count <= 0 || (channels != 1 && channels != 3) || size <= 0) {
        snprintf(err, err_size, "%s: bad grid (%d images, %d channels)", path, count, channels);
        return -1;
    }
    int rows = (count + GRID_COLS - 1) / GRID_COLS;
    int width = GRID_PAD + GRID_COLS * (size + GRID_PAD);
    int height = GRID_PAD + rows * (size + GRID_PAD);
    uint8_t *pix = calloc((size_t)width * height, (size_t)channels);
    if (!pix) {
        snprintf(err, err_size, "%s: out of host memory", path);
        return -1;
    }
    render(pix, width, images, count, channels, size);
    FILE *f = fopen(path, "wb");
    int rc = f ? write_png(f, pix, width, height, channels) : -1;
    if (!f)
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
    else if (rc != 0)
        snprintf(err, err_size, "%s: libpng failed to write", path);
    if (f && fclose(f) != 0 && rc == 0) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        rc = -1;
    }
    free(pix);
    return rc;
}
