/* CUDA C -> PTX with NVRTC, loaded at run time with dlopen (a Kiln binary runs on machines
 * without CUDA). The library is searched in $CUDA_HOME and $CUDA_PATH, the standard install
 * folder, then the loader's own search path, under its unversioned and versioned names. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

typedef struct nvrtc_api {
  int (*create)(void **prog, const char *src, const char *name, int n_headers,
                const char *const *headers, const char *const *include_names);
  int (*compile)(void *prog, int n_options, const char *const *options);
  int (*log_size)(void *prog, size_t *n);
  int (*log)(void *prog, char *log);
  int (*ptx_size)(void *prog, size_t *n);
  int (*ptx)(void *prog, char *ptx);
  int (*destroy)(void **prog);
  const char *(*error_string)(int result);
} nvrtc_api;

static const char *const lib_names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                                        "libnvrtc.so.11.2"};

static void *open_in(const char *dir) {
  char path[1024];
  static const char *const subdirs[] = {"lib64", "lib", "targets/x86_64-linux/lib"};
  for (size_t s = 0; s < sizeof subdirs / sizeof subdirs[0]; s++)
    for (size_t i = 0; i < sizeof lib_names / sizeof lib_names[0]; i++) {
      snprintf(path, sizeof path, "%s/%s/%s", dir, subdirs[s], lib_names[i]);
      void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (h) return h;
    }
  return NULL;
}

static void *open_nvrtc(void) {
  const char *envs[] = {"CUDA_HOME", "CUDA_PATH"};
  for (int i = 0; i < 2; i++) {
    const char *d = getenv(envs[i]);
    void *h = d && *d ? open_in(d) : NULL;
    if (h) return h;
  }
  void *h = open_in("/usr/local/cuda");
  for (size_t i = 0; !h && i < sizeof lib_names / sizeof lib_names[0]; i++)
    h = dlopen(lib_names[i], RTLD_NOW | RTLD_LOCAL);
  return h;
}

#define LOAD(field, sym)                                                                           \
  do {                                                                                             \
    void *p_ = dlsym(h, sym);                                                                      \
    if (!p_) return false;                                                                         \
    memcpy(&api->field, &p_, sizeof p_);                                                           \
  } while (0)

static bool load_api(void *h, nvrtc_api *api) {
  LOAD(create, "nvrtcCreateProgram");
  LOAD(compile, "nvrtcCompileProgram");
  LOAD(log_size, "nvrtcGetProgramLogSize");
  LOAD(log, "nvrtcGetProgramLog");
  LOAD(ptx_size, "nvrtcGetPTXSize");
  LOAD(ptx, "nvrtcGetPTX");
  LOAD(destroy, "nvrtcDestroyProgram");
  LOAD(error_string, "nvrtcGetErrorString");
  return true;
}

/* Loaded once and kept for the life of the process. */
static const nvrtc_api *nvrtc(void) {
  static nvrtc_api api;
  static int state; /* 0 not tried, 1 loaded, -1 absent */
  if (state == 0) {
    void *h = open_nvrtc();
    state = h && load_api(h, &api) ? 1 : -1;
  }
  return state > 0 ? &api : NULL;
}

static kiln_status compile_log(const nvrtc_api *api, void *prog, int rc) {
  size_t n = 0;
  char *log = NULL;
  if (api->log_size(prog, &n) == 0 && n > 0) {
    log = kiln_xmalloc(n + 1);
    if (api->log(prog, log) != 0) log[0] = 0;
    log[n] = 0;
  }
  kiln_status st =
      kiln_error(KILN_ERR_FAILED, "NVRTC: %s\n%.4000s", api->error_string(rc), log ? log : "");
  free(log);
  return st;
}

kiln_status kiln_codegen_cuda_ptx(const char *src, const char *arch, char **out_ptx) {
  const nvrtc_api *api = nvrtc();
  if (!api) return kiln_unsupported("NVRTC (libnvrtc.so) not found");
  void *prog = NULL;
  int rc = api->create(&prog, src, "kiln.cu", 0, NULL, NULL);
  if (rc != 0) return kiln_error(KILN_ERR_FAILED, "NVRTC: %s", api->error_string(rc));
  char opt_arch[64];
  snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=%s", arch ? arch : "compute_90");
  const char *opts[] = {opt_arch, KILN_CODEGEN_NVRTC_FLAGS};
  kiln_status st = KILN_OK;
  rc = api->compile(prog, 2, opts);
  if (rc != 0) st = compile_log(api, prog, rc);
  size_t n = 0;
  if (!st && (rc = api->ptx_size(prog, &n)) != 0)
    st = kiln_error(KILN_ERR_FAILED, "NVRTC: %s", api->error_string(rc));
  if (!st) {
    char *ptx = kiln_xmalloc(n + 1);
    rc = api->ptx(prog, ptx);
    ptx[n] = 0;
    if (rc != 0) {
      free(ptx);
      st = kiln_error(KILN_ERR_FAILED, "NVRTC: %s", api->error_string(rc));
    } else {
      *out_ptx = ptx;
    }
  }
  api->destroy(&prog);
  return st;
}
