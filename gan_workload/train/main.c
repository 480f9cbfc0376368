/* main.c — build/bin/train: the DCGAN trainer of the vramtrace GAN workload (README.md). */
#include "train.h"

int main(int argc, char **argv)
{
    tr_options o;
    int rc = tr_options_parse(&o, argc, argv, stdout, stderr);
    if (rc != 0)
        return rc > 0 ? 0 : 1;
    return tr_train_run(&o);
}
