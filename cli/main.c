/* cli/main.c — the fusecheck command. */
#include "ir/ir.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("fusecheck %s\n", FUSECHECK_VERSION);
        return 0;
    }
    fprintf(stderr, "usage: fusecheck --version\n");
    return 2;
}
