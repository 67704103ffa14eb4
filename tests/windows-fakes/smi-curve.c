/* Fake nvidia-smi.exe that plays a scripted memory curve, for the sampler's Windows test
   (tests/cli/windows_sampler.rs); the twin of the `sh` fake in src/prove/sampler/tests.rs.
   Files live next to the exe: `pid` (whose rows to print; rows start once it exists),
   `compute-curve` (one tick per line, rows separated by `;`, `PID` replaced by that pid),
   `device-curve` (one memory.used per tick; `IDLE` is printed until `pid` exists). After the
   last tick it writes `compute-done` / `device-done` and lingers like the real monitor.
   `smi-curve.exe sleep` just lives for 30 s: the stand-in for the example. */
#include <windows.h>
#include <stdio.h>
#include <string.h>

#define IDLE 300
static char dir[MAX_PATH];

static void path_of(char *out, const char *name) { snprintf(out, MAX_PATH * 2, "%s\\%s", dir, name); }

static int read_pid(void) {
    char p[MAX_PATH * 2];
    int pid = 0;
    FILE *f;
    path_of(p, "pid");
    if (!(f = fopen(p, "r"))) return 0;
    if (fscanf(f, "%d", &pid) != 1) pid = 0;
    fclose(f);
    return pid;
}

static void touch(const char *name) {
    char p[MAX_PATH * 2];
    FILE *f;
    path_of(p, name);
    if ((f = fopen(p, "w"))) fclose(f);
}

static void compute(void) {
    char p[MAX_PATH * 2], line[1024];
    int pid;
    FILE *f;
    while (!(pid = read_pid())) Sleep(20);
    path_of(p, "compute-curve");
    if ((f = fopen(p, "r"))) {
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\r\n")] = '\0';
            for (char *row = strtok(line, ";"); row; row = strtok(NULL, ";")) {
                if (!strncmp(row, "PID", 3)) printf("%d%s\n", pid, row + 3);
                else printf("%s\n", row);
            }
            fflush(stdout);
            Sleep(50);
        }
        fclose(f);
    }
    touch("compute-done");
}

static void device(void) {
    char p[MAX_PATH * 2], line[256];
    FILE *f;
    while (!read_pid()) {
        printf("%d\n", IDLE);
        fflush(stdout);
        Sleep(30);
    }
    path_of(p, "device-curve");
    if ((f = fopen(p, "r"))) {
        while (fgets(line, sizeof line, f)) {
            fputs(line, stdout);
            fflush(stdout);
            Sleep(50);
        }
        fclose(f);
    }
    touch("device-done");
}

int main(int argc, char **argv) {
    char *slash;
    GetModuleFileNameA(NULL, dir, sizeof dir);
    if ((slash = strrchr(dir, '\\'))) *slash = '\0';
    if (argc > 1 && !strcmp(argv[1], "sleep")) {
        Sleep(30000);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--query-compute-apps=", 21)) { compute(); break; }
        if (!strncmp(argv[i], "--query-gpu=memory.used", 23)) { device(); break; }
        if (i == argc - 1) {
            fprintf(stderr, "fake nvidia-smi: unexpected arguments\n");
            return 2;
        }
    }
    Sleep(60000);
    return 0;
}
