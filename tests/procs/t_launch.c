/* t_launch: a minimal distributed launcher (as torchrun or mpirun start
 * ranks): t_launch N PROGRAM ARGS... forks N processes, each with RANK=r,
 * LOCAL_RANK=r and WORLD_SIZE=N in its environment, execs PROGRAM in each,
 * waits for all. Exit: 0 when every rank exited 0, else 1. It never calls
 * CUDA itself. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int n = argc > 2 ? atoi(argv[1]) : 0, bad = 0;
    char v[16];
    if (n < 1 || n > 64) {
        fprintf(stderr, "usage: t_launch N PROGRAM ARGS...\n");
        return 2;
    }
    snprintf(v, sizeof v, "%d", n);
    setenv("WORLD_SIZE", v, 1);
    for (int r = 0; r < n; r++) {
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            snprintf(v, sizeof v, "%d", r);
            setenv("RANK", v, 1);
            setenv("LOCAL_RANK", v, 1);
            execvp(argv[2], argv + 2);
            _exit(127);
        }
    }
    for (int st; wait(&st) > 0;)
        bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    return bad;
}
