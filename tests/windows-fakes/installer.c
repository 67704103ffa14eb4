/* Fake installer .exe for stackpin's Windows tests, built with mingw by
   scripts/test-windows.sh: prints each argument on its own line (`arg: …`), appends them to
   the file named by FAKE_INSTALLER_LOG when set, and exits with the number in its first
   argument (3010 = success, reboot required). */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    const char *log = getenv("FAKE_INSTALLER_LOG");
    FILE *f = log ? fopen(log, "a") : NULL;
    for (int i = 1; i < argc; i++) {
        printf("arg: %s\n", argv[i]);
        if (f) fprintf(f, "%s\n", argv[i]);
    }
    if (f) fclose(f);
    return argc > 1 ? atoi(argv[1]) : 0;
}
