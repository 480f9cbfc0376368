/* train_check — checks on train's outputs for the integration tests.
 *
 *   train_check losses LOG        D's loss behaves like a GAN's: it neither collapses to 0 nor
 *                                 stays at its starting value (parsed from the step= lines)
 *   train_check grids A.png B.png the grids differ (mean abs difference) and B's images are
 *                                 not flat (mean per-image variance)
 *   train_check same-allocs A B   two allocation logs (train --alloc-log) are identical
 * Exit status 0 when the check holds, 1 with a reason on stderr otherwise. */
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_LINES = 100000 };

static int read_losses(const char *path, double *loss, int max)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < max) {
        const char *p = strstr(line, " loss_D=");
        if (strncmp(line, "step=", 5) == 0 && p)
            loss[n++] = strtod(p + 8, NULL);
    }
    fclose(f);
    return n;
}

static double mean(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i];
    return n ? s / n : NAN;
}

static int check_losses(const char *path)
{
    static double loss[MAX_LINES];
    int n = read_losses(path, loss, MAX_LINES);
    if (n < 8) {
        fprintf(stderr, "losses: only %d step lines in %s\n", n, path);
        return 1;
    }
    for (int i = 0; i < n; i++)
        if (!isfinite(loss[i])) {
            fprintf(stderr, "losses: loss_D not finite at line %d\n", i);
            return 1;
        }
    double first = loss[0], tail = mean(loss + n - n / 4, n / 4);
    double lo = loss[0], hi = loss[0];
    for (int i = 1; i < n; i++) {
        lo = fmin(lo, loss[i]);
        hi = fmax(hi, loss[i]);
    }
    printf("losses: %d lines, first %.4f, last quarter mean %.4f, range [%.4f, %.4f]\n", n, first,
           tail, lo, hi);
    if (tail < 0.05) {
        fprintf(stderr, "losses: D's loss collapsed to %.4f (G no longer fools D at all)\n", tail);
        return 1;
    }
    if (hi - lo < 0.05 || fabs(tail - first) < 0.05) {
        fprintf(stderr, "losses: D's loss stays at its start (%.4f -> %.4f, range %.4f)\n", first,
                tail, hi - lo);
        return 1;
    }
    return 0;
}

static unsigned char *read_gray(const char *path, unsigned *w, unsigned *h)
{
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&pi, path)) {
        fprintf(stderr, "%s: %s\n", path, pi.message);
        return NULL;
    }
    pi.format = PNG_FORMAT_GRAY;
    unsigned char *buf = malloc(PNG_IMAGE_SIZE(pi));
    if (!buf || !png_image_finish_read(&pi, NULL, buf, 0, NULL)) {
        fprintf(stderr, "%s: %s\n", path, pi.message);
        free(buf);
        return NULL;
    }
    *w = pi.width;
    *h = pi.height;
    return buf;
}

/* Mean over the 64 tiles of each tile's pixel variance (tiles of size s, 2-pixel padding). */
static double tile_variance(const unsigned char *p, unsigned w, int s)
{
    double total = 0;
    for (int t = 0; t < 64; t++) {
        int x0 = 2 + (t % 8) * (s + 2), y0 = 2 + (t / 8) * (s + 2);
        double sum = 0, sq = 0;
        for (int y = 0; y < s; y++)
            for (int x = 0; x < s; x++) {
                double v = p[(size_t)(y0 + y) * w + x0 + x];
                sum += v;
                sq += v * v;
            }
        double m = sum / (s * s);
        total += sq / (s * s) - m * m;
    }
    return total / 64;
}

static int check_grids(const char *a_path, const char *b_path)
{
    unsigned aw, ah, bw, bh;
    unsigned char *a = read_gray(a_path, &aw, &ah), *b = read_gray(b_path, &bw, &bh);
    int rc = 1;
    if (!a || !b || aw != bw || ah != bh || aw != ah || (aw - 2) % 8 != 0) {
        fprintf(stderr, "grids: unreadable or different sizes\n");
        goto out;
    }
    double diff = 0;
    for (size_t i = 0; i < (size_t)aw * ah; i++)
        diff += abs((int)a[i] - (int)b[i]);
    diff /= (double)aw * ah;
    int s = (int)(aw - 2) / 8 - 2;
    double va = tile_variance(a, aw, s), vb = tile_variance(b, bw, s);
    printf("grids: mean abs difference %.2f (of 255), per-image variance %.1f -> %.1f\n", diff, va,
           vb);
    if (diff < 5.0)
        fprintf(stderr, "grids: the samples barely changed\n");
    else if (vb < 100.0)
        fprintf(stderr, "grids: the trained samples are flat images\n");
    else
        rc = 0;
out:
    free(a);
    free(b);
    return rc;
}

static int check_same_allocs(const char *a_path, const char *b_path)
{
    FILE *a = fopen(a_path, "r"), *b = fopen(b_path, "r");
    if (!a || !b) {
        fprintf(stderr, "same-allocs: cannot open the logs\n");
        return 1;
    }
    char la[512], lb[512];
    long line = 0, allocs = 0;
    int rc = 0;
    for (;;) {
        char *ra = fgets(la, sizeof la, a), *rb = fgets(lb, sizeof lb, b);
        line++;
        if (!ra && !rb)
            break;
        if (!ra || !rb || strcmp(la, lb) != 0) {
            fprintf(stderr, "same-allocs: line %ld differs:\n  %s  %s", line, ra ? la : "EOF\n",
                    rb ? lb : "EOF\n");
            rc = 1;
            break;
        }
        allocs += la[0] == 'a';
    }
    fclose(a);
    fclose(b);
    if (rc == 0 && allocs == 0) {
        fprintf(stderr, "same-allocs: empty logs\n");
        rc = 1;
    }
    if (rc == 0)
        printf("same-allocs: %ld allocations, identical\n", allocs);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "losses") == 0)
        return check_losses(argv[2]);
    if (argc == 4 && strcmp(argv[1], "grids") == 0)
        return check_grids(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "same-allocs") == 0)
        return check_same_allocs(argv[2], argv[3]);
    fprintf(stderr, "usage: train_check losses LOG | grids A B | same-allocs A B\n");
    return 2;
}
