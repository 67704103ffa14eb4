/* A hostile fake installer .exe for stackpin's Windows tests, built with mingw by
   scripts/test-windows.sh. `hang.exe parent TICKS` starts `hang.exe child TICKS` the way
   NVIDIA's setup starts its real installer: the child inherits stdout and stderr. Then the parent
   hangs for ever. The child appends a line to TICKS every 100 ms for as long as it lives, so a
   test can tell from outside whether it outlived its parent's timeout. */
#include <windows.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "child") == 0) {
        for (;;) {
            FILE *f = fopen(argv[2], "a");
            if (f) {
                fputs("tick\n", f);
                fclose(f);
            }
            Sleep(100);
        }
    }
    if (argc > 2 && strcmp(argv[1], "parent") == 0) {
        char self[MAX_PATH];
        char cmd[2 * MAX_PATH + 32];
        STARTUPINFOA si;
        PROCESS_INFORMATION pi;
        GetModuleFileNameA(NULL, self, sizeof self);
        snprintf(cmd, sizeof cmd, "\"%s\" child \"%s\"", self, argv[2]);
        ZeroMemory(&si, sizeof si);
        si.cb = sizeof si;
        si.dwFlags = STARTF_USESTDHANDLES;
        si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
        si.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
        si.hStdError = GetStdHandle(STD_ERROR_HANDLE);
        if (!CreateProcessA(NULL, cmd, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi)) {
            fprintf(stderr, "cannot start the child: %lu\n", GetLastError());
            return 2;
        }
        printf("Extracting... started the installer, pid %lu\n", pi.dwProcessId);
        fflush(stdout);
        Sleep(INFINITE);
    }
    fprintf(stderr, "usage: hang.exe parent|child TICKS\n");
    return 1;
}
