/* vt_gen: write a synthetic trace (tests/report/gen.c) to a file.
 *   vt_gen SCENARIO OUT       basic growth capacity leakoom frag external xss
 *                             noend empty badutf8
 *   vt_gen big N OUT          about N events (benchmark) */
#include "gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "big"))
        return vtg_big(argv[3], strtoull(argv[2], NULL, 10)) == 0 ? 0 : 1;
    if (argc != 3) {
        fprintf(stderr, "usage: vt_gen SCENARIO OUT | vt_gen big N OUT\n");
        return 2;
    }
    if (vtg_scenario(argv[1], argv[2]) != 0) {
        fprintf(stderr, "vt_gen: cannot write scenario %s to %s\n", argv[1], argv[2]);
        return 1;
    }
    return 0;
}
