/* Fake training example for `prove` on a fake Windows host (tests/cli/windows_prove.rs), the
   twin of the `sh` example in tests/cli/prove.rs. `example.exe BATCH [wddm] [fail]`:
   its own row in the fake nvidia-smi's apps.csv (folder STACKPIN_FAKE_NVIDIA_DIR) rises to
   2,560 MiB at batch 64 (300 + 35 x batch otherwise) and falls again, as `[N/A]` with `wddm`
   (what WDDM shows), while another job (pid 4242) holds 7,000 MiB throughout and memory.csv
   follows 7,300 + the example's figure. Then it prints its STACKPIN_RESULT line and exits 0, or
   with `fail` prints a CUDA out-of-memory error and exits 1. With `launch` it is a launcher, as a
   venv's Scripts\\python.exe is: it starts itself again without `launch` as its child, waits
   for it and exits with its code, so the memory belongs to the child's pid.
   Files are replaced by rename so the looping fake nvidia-smi never reads half a file. */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[4096];
static int wddm;

static void put(const char *name, const char *text) {
    char tmp[4400], dst[4400];
    FILE *f;
    snprintf(tmp, sizeof tmp, "%s\\%s.tmp", dir, name);
    snprintf(dst, sizeof dst, "%s\\%s", dir, name);
    if (!(f = fopen(tmp, "w"))) return;
    fputs(text, f);
    fclose(f);
    /* The reader may hold the file open for a moment: try again rather than give up. */
    for (int i = 0; i < 100 && !MoveFileExA(tmp, dst, MOVEFILE_REPLACE_EXISTING); i++) Sleep(5);
}

static void at(int mib, int ms) {
    char apps[256], mem[64];
    unsigned long pid = GetCurrentProcessId();
    if (wddm) snprintf(apps, sizeof apps, "4242, 7000\n%lu, [N/A]\n", pid);
    else snprintf(apps, sizeof apps, "4242, 7000\n%lu, %d\n", pid, mib);
    snprintf(mem, sizeof mem, "%d\n", 7300 + mib);
    put("apps.csv", apps);
    put("memory.csv", mem);
    Sleep(ms);
}

int main(int argc, char **argv) {
    const char *env = getenv("STACKPIN_FAKE_NVIDIA_DIR");
    int batch, peak, fail = 0;
    if (!env || argc < 2) {
        fprintf(stderr, "fake example: usage BATCH [wddm] [fail] with STACKPIN_FAKE_NVIDIA_DIR set\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", env);
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "launch")) {
            char self[MAX_PATH], line[8192];
            STARTUPINFOA si = {sizeof si};
            PROCESS_INFORMATION pi;
            DWORD code = 1;
            GetModuleFileNameA(NULL, self, sizeof self);
            snprintf(line, sizeof line, "\"%s\" %s", self, argv[1]);
            for (int j = 2; j < argc; j++) {
                if (strcmp(argv[j], "launch")) {
                    strncat(line, " ", sizeof line - strlen(line) - 1);
                    strncat(line, argv[j], sizeof line - strlen(line) - 1);
                }
            }
            if (!CreateProcessA(self, line, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi)) return 2;
            WaitForSingleObject(pi.hProcess, INFINITE);
            GetExitCodeProcess(pi.hProcess, &code);
            return (int)code;
        }
    }
    batch = atoi(argv[1]);
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "wddm")) wddm = 1;
        if (!strcmp(argv[i], "fail")) fail = 1;
    }
    peak = batch == 64 ? 2560 : 300 + 35 * batch;
    at(peak / 3, 400);
    at(peak, 600);
    at(peak / 2, 300);
    if (fail) {
        fprintf(stderr, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. "
                        "GPU 0 has a total capacity of 23.65 GiB of which 11.06 MiB is free.\n");
        return 1;
    }
    printf("STACKPIN_RESULT {\"batch\": %d, \"peak_reserved_mib\": 2300, \"peak_allocated_mib\": 2100, "
           "\"context_mib\": 260, \"samples_per_s\": 812.5}\n", batch);
    fflush(stdout);
    put("apps.csv", "4242, 7000\n");
    put("memory.csv", "7300\n");
    return 0;
}
