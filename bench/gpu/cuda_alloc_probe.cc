// (Written as C: a probe that runs anywhere, built without the project's warnings.)
/* How much GPU memory one process can allocate, through the CUDA driver API
 * loaded with dlopen (no CUDA toolkit needed to build it): cuInit, a context
 * on device 0, then cuMemAlloc in chunks until the driver refuses. MPS's
 * CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (and HAMi-core's CUDA_DEVICE_MEMORY_LIMIT_0)
 * act on exactly this path. Prints one line:
 *   allocated <MiB> MiB in <n> chunks of <chunk> MiB, then: <the refusal>
 * Exit 0 after a refusal (or --max-mib reached), 2 when no context could be
 * made (a card in EXCLUSIVE_PROCESS mode held by the MPS server refuses a
 * process that is not its client), 77 when there is no CUDA driver here.
 * Usage: cuda_alloc_probe [--chunk-mib N] [--max-mib N] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void* CUcontext;
typedef unsigned long long CUdeviceptr;

int main(int argc, char** argv) {
  long chunk_mib = 256, max_mib = 1L << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--chunk-mib") == 0) chunk_mib = atol(argv[i + 1]);
    else if (strcmp(argv[i], "--max-mib") == 0) max_mib = atol(argv[i + 1]);
    else {
      fprintf(stderr, "usage: %s [--chunk-mib N] [--max-mib N]\n", argv[0]);
      return 64;
    }
  }
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (cuda == NULL) {
    printf("no CUDA driver here (libcuda.so.1: %s)\n", dlerror());
    return 77;
  }
  CUresult (*cu_init)(unsigned) = (CUresult(*)(unsigned))dlsym(cuda, "cuInit");
  CUresult (*device_get)(CUdevice*, int) = (CUresult(*)(CUdevice*, int))dlsym(cuda, "cuDeviceGet");
  CUresult (*ctx_create)(CUcontext*, unsigned, CUdevice) = (CUresult(*)(CUcontext*, unsigned, CUdevice))dlsym(cuda, "cuCtxCreate_v2");
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = (CUresult(*)(CUdeviceptr*, size_t))dlsym(cuda, "cuMemAlloc_v2");
  CUresult (*error_name)(CUresult, const char**) = (CUresult(*)(CUresult, const char**))dlsym(cuda, "cuGetErrorName");
  if (!cu_init || !device_get || !ctx_create || !mem_alloc || !error_name) {
    printf("libcuda.so.1 lacks the driver API this probe uses\n");
    return 77;
  }
  const char* name = "?";
  CUresult r = cu_init(0);
  CUdevice dev = 0;
  CUcontext ctx = NULL;
  if (r == 0) r = device_get(&dev, 0);
  if (r == 0) r = ctx_create(&ctx, 0, dev);
  if (r != 0) {
    error_name(r, &name);
    printf("no context on device 0: %s (%d)\n", name, r);
    return 2;
  }
  long total = 0, chunks = 0;
  while (total + chunk_mib <= max_mib) {
    CUdeviceptr p = 0;
    r = mem_alloc(&p, (size_t)chunk_mib << 20);
    if (r != 0) break;
    total += chunk_mib;
    ++chunks;
  }
  if (r != 0) error_name(r, &name);
  printf("allocated %ld MiB in %ld chunks of %ld MiB, then: %s\n", total, chunks, chunk_mib, r != 0 ? name : "--max-mib reached");
  return 0;
}
