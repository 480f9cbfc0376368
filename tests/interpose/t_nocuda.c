/* t_nocuda: a program with nothing CUDA in it runs unharmed under the
 * preload; its trace reads back empty and complete. */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    char *p = malloc(100);
    if (!p)
        return 2;
    snprintf(p, 100, "hello");
    puts(p);
    free(p);
    printf("expect: allocs=0 frees=0 failed=0 leaked=0 end=1\n");
    return 0;
}
