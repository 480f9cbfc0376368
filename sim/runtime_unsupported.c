/* Runtime entry points that PyTorch's CUDA build imports (so they must exist
 * for its libraries to load with RTLD_NOW) but that the simulated device does
 * not model: building CUDA graphs node by node (capture and launches are in
 * runtime_graph.c), capture into an existing graph, IPC, loaded libraries and their symbols,
 * occupancy, cooperative and extended launches, user objects; and those of texture programs
 * (texture and surface objects, array queries and copies past runtime_array.c's). Each returns
 * cudaErrorNotSupported ("operation not supported on this device", the
 * runtime API reference's error for features a device lacks), records it as
 * the last error and touches no output. */
#include "runtime_internal.h"

/* The parameters are named for the reader and deliberately unused. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

#define UNSUPPORTED                                                                                \
    {                                                                                              \
        return rt_ret(cudaErrorNotSupported);                                                      \
    }

// clang-format off
cudaError_t CUDARTAPI cudaFuncSetAttribute(const void *f, enum cudaFuncAttribute a, int v) UNSUPPORTED
cudaError_t CUDARTAPI cudaGetSymbolAddress(void **p, const void *s) UNSUPPORTED
cudaError_t CUDARTAPI cudaMemcpyToSymbol(const void *s, const void *src, size_t n, size_t off,
                                         enum cudaMemcpyKind k) UNSUPPORTED
cudaError_t CUDARTAPI cudaGraphAddNode(cudaGraphNode_t *n, cudaGraph_t g, const cudaGraphNode_t *d,
                                       const cudaGraphEdgeData *ed, size_t nd,
                                       struct cudaGraphNodeParams *p) UNSUPPORTED
cudaError_t CUDARTAPI cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle *h, cudaGraph_t g,
                                                       unsigned int v, unsigned int f) UNSUPPORTED
cudaError_t CUDARTAPI cudaGraphRetainUserObject(cudaGraph_t g, cudaUserObject_t o, unsigned int c,
                                                unsigned int f) UNSUPPORTED
cudaError_t CUDARTAPI cudaUserObjectCreate(cudaUserObject_t *o, void *p, cudaHostFn_t d,
                                           unsigned int c, unsigned int f) UNSUPPORTED
cudaError_t CUDARTAPI cudaUserObjectRelease(cudaUserObject_t o, unsigned int c) UNSUPPORTED
cudaError_t CUDARTAPI cudaStreamBeginCaptureToGraph(cudaStream_t s, cudaGraph_t g,
                                                    const cudaGraphNode_t *d,
                                                    const cudaGraphEdgeData *ed, size_t n,
                                                    enum cudaStreamCaptureMode m) UNSUPPORTED
cudaError_t CUDARTAPI cudaStreamUpdateCaptureDependencies(cudaStream_t s, cudaGraphNode_t *d,
                                                          const cudaGraphEdgeData *ed, size_t n,
                                                          unsigned int f) UNSUPPORTED
cudaError_t CUDARTAPI cudaIpcGetEventHandle(cudaIpcEventHandle_t *h, cudaEvent_t e) UNSUPPORTED
cudaError_t CUDARTAPI cudaIpcOpenEventHandle(cudaEvent_t *e, cudaIpcEventHandle_t h) UNSUPPORTED
cudaError_t CUDARTAPI cudaKernelSetAttributeForDevice(cudaKernel_t k, enum cudaFuncAttribute a,
                                                      int v, int d) UNSUPPORTED
cudaError_t CUDARTAPI cudaLaunchCooperativeKernel(const void *f, dim3 g, dim3 b, void **a, size_t sm,
                                                  cudaStream_t s) UNSUPPORTED
cudaError_t CUDARTAPI cudaLaunchKernelExC(const cudaLaunchConfig_t *c, const void *f,
                                          void **a) UNSUPPORTED
cudaError_t CUDARTAPI cudaLibraryGetGlobal(void **p, size_t *b, cudaLibrary_t l,
                                           const char *n) UNSUPPORTED
cudaError_t CUDARTAPI cudaLibraryGetKernel(cudaKernel_t *k, cudaLibrary_t l, const char *n) UNSUPPORTED
cudaError_t CUDARTAPI cudaLibraryGetKernelCount(unsigned int *c, cudaLibrary_t l) UNSUPPORTED
cudaError_t CUDARTAPI cudaLibraryGetManaged(void **p, size_t *b, cudaLibrary_t l,
                                            const char *n) UNSUPPORTED
cudaError_t CUDARTAPI cudaLibraryGetUnifiedFunction(void **f, cudaLibrary_t l,
                                                    const char *s) UNSUPPORTED
cudaError_t CUDARTAPI cudaLibraryLoadData(cudaLibrary_t *l, const void *c, enum cudaJitOption *jo,
                                          void **jv, unsigned int nj, enum cudaLibraryOption *lo,
                                          void **lv, unsigned int nl) UNSUPPORTED
cudaError_t CUDARTAPI cudaLibraryLoadFromFile(cudaLibrary_t *l, const char *f,
                                              enum cudaJitOption *jo, void **jv, unsigned int nj,
                                              enum cudaLibraryOption *lo, void **lv,
                                              unsigned int nl) UNSUPPORTED
cudaError_t CUDARTAPI cudaLibraryUnload(cudaLibrary_t l) UNSUPPORTED
cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, const void *f, int b,
                                                                    size_t sm) UNSUPPORTED
cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, const void *f,
                                                                             int b, size_t sm,
                                                                             unsigned int fl) UNSUPPORTED
/* Textures, surfaces and the array entry points beyond allocation and 2D
 * copies (runtime_array.c): a texture program gets a clean error here, not
 * a failed symbol lookup. */
cudaError_t CUDARTAPI cudaCreateTextureObject(cudaTextureObject_t *t, const struct cudaResourceDesc *r,
                                              const struct cudaTextureDesc *d,
                                              const struct cudaResourceViewDesc *v) UNSUPPORTED
cudaError_t CUDARTAPI cudaDestroyTextureObject(cudaTextureObject_t t) UNSUPPORTED
cudaError_t CUDARTAPI cudaGetTextureObjectResourceDesc(struct cudaResourceDesc *r,
                                                       cudaTextureObject_t t) UNSUPPORTED
cudaError_t CUDARTAPI cudaCreateSurfaceObject(cudaSurfaceObject_t *s,
                                              const struct cudaResourceDesc *r) UNSUPPORTED
cudaError_t CUDARTAPI cudaDestroySurfaceObject(cudaSurfaceObject_t s) UNSUPPORTED
cudaError_t CUDARTAPI cudaGetChannelDesc(struct cudaChannelFormatDesc *d,
                                         cudaArray_const_t a) UNSUPPORTED
cudaError_t CUDARTAPI cudaArrayGetInfo(struct cudaChannelFormatDesc *d, struct cudaExtent *e,
                                       unsigned int *f, cudaArray_t a) UNSUPPORTED
cudaError_t CUDARTAPI cudaMemcpyToArray(cudaArray_t d, size_t w, size_t h, const void *s, size_t n,
                                        enum cudaMemcpyKind k) UNSUPPORTED
cudaError_t CUDARTAPI cudaMemcpyFromArray(void *d, cudaArray_const_t s, size_t w, size_t h,
                                          size_t n, enum cudaMemcpyKind k) UNSUPPORTED
cudaError_t CUDARTAPI cudaMemcpy2DArrayToArray(cudaArray_t d, size_t wd, size_t hd,
                                               cudaArray_const_t s, size_t ws, size_t hs, size_t w,
                                               size_t h, enum cudaMemcpyKind k) UNSUPPORTED
cudaError_t CUDARTAPI cudaMemcpy3D(const struct cudaMemcpy3DParms *p) UNSUPPORTED
cudaError_t CUDARTAPI cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p,
                                        cudaStream_t s) UNSUPPORTED
    // clang-format on
