/* Fake nvidia-smi.exe for stackpin's Windows tests (tests/cli/fakes_windows.rs), built with
   mingw by scripts/test-windows.sh. The Windows twin of the `sh` fake in tests/cli/fakes.rs:
   answers come from files in the folder named by STACKPIN_FAKE_NVIDIA_DIR:
   state (mode=ok|no-driver|mismatch, driver=VERSION, cuda=X.Y), gpus.csv (@DRIVER@ replaced),
   memory.csv, apps.csv; every call's arguments are appended to calls.log. With `-lms N` the
   memory.used and compute-apps queries re-read their file every 50 ms until killed, as the real
   one does for the prove sampler. */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[4096];

static FILE *open_in_dir(const char *name, const char *mode) {
    char path[4400];
    snprintf(path, sizeof path, "%s\\%s", dir, name);
    return fopen(path, mode);
}

static void cat(const char *name, const char *driver) {
    FILE *f = open_in_dir(name, "r");
    char line[1024];
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        char *at = driver ? strstr(line, "@DRIVER@") : NULL;
        if (at) {
            *at = '\0';
            printf("%s%s%s", line, driver, at + 8);
        } else {
            fputs(line, stdout);
        }
    }
    fclose(f);
}

static void read_state(char *mode, char *driver, char *cuda) {
    FILE *f = open_in_dir("state", "r");
    char line[256];
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!strncmp(line, "mode=", 5)) strcpy(mode, line + 5);
        if (!strncmp(line, "driver=", 7)) strcpy(driver, line + 7);
        if (!strncmp(line, "cuda=", 5)) strcpy(cuda, line + 5);
    }
    fclose(f);
}

/* `cat` once, or for ever with `-lms` (the sampler kills it). */
static void emit(const char *name, int loop) {
    do {
        cat(name, NULL);
        fflush(stdout);
        if (loop) Sleep(50);
    } while (loop);
}

int main(int argc, char **argv) {
    char mode[64] = "ok", driver[64] = "", cuda[64] = "";
    const char *env = getenv("STACKPIN_FAKE_NVIDIA_DIR");
    FILE *log;
    int loop = 0;
    if (!env) {
        fprintf(stderr, "fake nvidia-smi: STACKPIN_FAKE_NVIDIA_DIR is not set\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", env);
    read_state(mode, driver, cuda);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-lms")) loop = 1;
    if ((log = open_in_dir("calls.log", "a"))) {
        for (int i = 1; i < argc; i++) fprintf(log, i > 1 ? " %s" : "%s", argv[i]);
        fputc('\n', log);
        fclose(log);
    }
    if (!strcmp(mode, "no-driver")) {
        puts("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
             "Make sure that the latest NVIDIA driver is installed and running.");
        return 9;
    }
    if (!strcmp(mode, "mismatch")) {
        puts("Failed to initialize NVML: Driver/library version mismatch");
        printf("NVML library version: %s\n", driver);
        return 18;
    }
    if (argc > 1 && !strncmp(argv[1], "--query-gpu=memory.used", 23)) {
        emit("memory.csv", loop);
        return 0;
    }
    if (argc > 1 && !strncmp(argv[1], "--query-gpu=", 12)) {
        cat("gpus.csv", driver);
        return 0;
    }
    if (argc > 1 && !strncmp(argv[1], "--query-compute-apps=", 21)) {
        emit("apps.csv", loop);
        return 0;
    }
    printf("| NVIDIA-SMI %s             Driver Version: %s     CUDA Version: %s     |\n",
           driver, driver, cuda);
    return 0;
}
