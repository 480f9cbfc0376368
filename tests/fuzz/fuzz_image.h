/* fuzz_image.h: the fuzz targets' one way of turning an input into a whole
 * .vtrace image. An input that starts with the .vtrace magic is a whole file
 * already; any other input is the content of one batch (chunks of records),
 * wrapped in a valid header and one checksummed zstd frame, so that the
 * fuzzer reaches the chunk and record decoders (and what reads their events)
 * instead of stopping at the frame checksum. */
#ifndef VRAMTRACE_TESTS_FUZZ_IMAGE_H
#define VRAMTRACE_TESTS_FUZZ_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/* The image of input (size bytes): *owned is set to a malloc'd image (free
 * it) when the input was wrapped, else NULL and the input itself is
 * returned. NULL when wrapping failed (out of memory). */
const uint8_t *vtf_image(const uint8_t *input, size_t size, size_t *len, uint8_t **owned);

#endif
