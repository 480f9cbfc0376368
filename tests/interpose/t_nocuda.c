/* t_nocuda: a program with nothing CUDA in it runs unharmed under the
 * preload and leaves no trace (run_case.sh notrace). */
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
    return 0;
}
