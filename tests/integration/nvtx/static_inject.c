/* static_inject.c: binds the NVTX loader of the unit test to the injection
 * through NVTX's static-injection hook (nvtxInit.h / nvtxExtInit.h: a strong
 * definition of InitializeInjectionNvtx2_fnptr and
 * InitializeInjectionNvtxExtension_fnptr overrides the headers' weak ones),
 * so the real NVTX header code calls interpose/nvtx_inject.c. */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info);

NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = InitializeInjectionNvtx2;
NvtxExtInitializeInjectionFunc_t InitializeInjectionNvtxExtension_fnptr =
    InitializeInjectionNvtxExtension;
