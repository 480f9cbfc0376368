/* The entry points the simulated device adds for PyTorch's CUDA build
 * (sim/runtime_torch.c, the generated runtime fallbacks, driver_torch.c, nvml.c),
 * through the toolkit's libcudart on the simulated one (LD_LIBRARY_PATH). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <string.h>

static void priorities_and_streams(void **state)
{
    (void)state;
    int least = 9, greatest = 9, prio = 9;
    cudaStream_t s;
    cudaEvent_t ev;
    assert_int_equal(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
    assert_int_equal(least, 0);
    assert_int_equal(greatest, -5);
    assert_int_equal(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, -3), cudaSuccess);
    assert_int_equal(cudaStreamGetPriority(s, &prio), cudaSuccess);
    assert_int_equal(prio, 0);
    assert_int_equal(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), cudaSuccess);
    assert_int_equal(cudaEventRecordWithFlags(ev, s, 0), cudaSuccess);
    assert_int_equal(cudaStreamWaitEvent(NULL, ev, 0), cudaSuccess);
    assert_int_not_equal(cudaStreamWaitEvent(s, ev, 0x80), cudaSuccess);
    assert_int_equal(cudaEventDestroy(ev), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

static void capture_state(void **state)
{
    (void)state;
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
    enum cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
    assert_int_equal(cudaStreamIsCapturing(NULL, &st), cudaSuccess);
    assert_int_equal(st, cudaStreamCaptureStatusNone);
    assert_int_equal(cudaThreadExchangeStreamCaptureMode(&m), cudaSuccess);
    assert_int_equal(m, cudaStreamCaptureModeGlobal);
    assert_int_equal(cudaThreadExchangeStreamCaptureMode(&m), cudaSuccess);
    assert_int_equal(m, cudaStreamCaptureModeRelaxed);
    /* The legacy stream cannot capture (tests/sim/test_sim_capture.c has the rest). */
    assert_int_equal(cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal),
                     cudaErrorStreamCaptureUnsupported);
    assert_int_equal(cudaGetLastError(), cudaErrorStreamCaptureUnsupported);
}

static void count_call(void *p)
{
    ++*(int *)p;
}

static void host_func_and_2d_copy(void **state)
{
    (void)state;
    int calls = 0;
    char host[4][8], back[4][8];
    void *dev;
    assert_int_equal(cudaLaunchHostFunc(NULL, count_call, &calls), cudaSuccess);
    assert_int_equal(calls, 1);
    for (int r = 0; r < 4; r++)
        memset(host[r], 'a' + r, sizeof host[r]);
    memset(back, 0, sizeof back);
    assert_int_equal(cudaMalloc(&dev, 4 * 16), cudaSuccess);
    assert_int_equal(cudaMemcpy2DAsync(dev, 16, host, 8, 8, 4, cudaMemcpyHostToDevice, NULL),
                     cudaSuccess);
    assert_int_equal(cudaMemcpy2DAsync(back, 8, dev, 16, 8, 4, cudaMemcpyDeviceToHost, NULL),
                     cudaSuccess);
    assert_memory_equal(host, back, sizeof host);
    assert_int_equal(cudaMemcpy2DAsync(dev, 4, host, 8, 8, 4, cudaMemcpyHostToDevice, NULL),
                     cudaErrorInvalidPitchValue);
    assert_int_equal(cudaFree(dev), cudaSuccess);
}

static void driver_table_by_version(void **state)
{
    (void)state;
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    assert_int_equal(cudaGetDriverEntryPointByVersion("cuMemCreate", &fn, 12000, 0, &q),
                     cudaSuccess);
    assert_int_equal(q, cudaDriverEntryPointSuccess);
    assert_non_null(fn);
    assert_int_equal(cudaGetDriverEntryPointByVersion("cuCtxPushCurrent", &fn, 12000, 0, &q),
                     cudaSuccess);
    assert_int_equal(q, cudaDriverEntryPointSuccess);
    assert_int_equal(cudaGetDriverEntryPointByVersion("cuNoSuchCall", &fn, 12000, 0, &q),
                     cudaSuccess);
    assert_int_equal(q, cudaDriverEntryPointSymbolNotFound);
    assert_int_equal(cudaGetDriverEntryPointByVersion("cuLogsRegisterCallback", &fn, 12000, 0, &q),
                     cudaSuccess);
    assert_int_equal(q, cudaDriverEntryPointVersionNotSufficent);
}

static void context_stack_and_attributes(void **state)
{
    (void)state;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    CUresult (*push)(CUcontext) = (CUresult(*)(CUcontext))dlsym(h, "cuCtxPushCurrent");
    CUresult (*pop)(CUcontext *) = (CUresult(*)(CUcontext *))dlsym(h, "cuCtxPopCurrent");
    CUresult (*get)(CUcontext *) = (CUresult(*)(CUcontext *))dlsym(h, "cuCtxGetCurrent");
    CUresult (*attr)(int *, CUdevice_attribute, CUdevice) =
        (CUresult(*)(int *, CUdevice_attribute, CUdevice))dlsym(h, "cuDeviceGetAttribute");
    assert_true(push && pop && get && attr);
    CUcontext cur = NULL, popped = NULL, after = NULL;
    assert_int_equal(cudaFree(0), cudaSuccess); /* the primary context is current */
    assert_int_equal(get(&cur), CUDA_SUCCESS);
    assert_non_null(cur);
    assert_int_equal(push(cur), CUDA_SUCCESS);
    assert_int_equal(pop(&popped), CUDA_SUCCESS);
    assert_ptr_equal(popped, cur);
    assert_int_equal(get(&after), CUDA_SUCCESS);
    assert_ptr_equal(after, cur);
    int v = -1;
    assert_int_equal(attr(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0),
                     CUDA_SUCCESS);
    assert_int_equal(v, 1);
    assert_int_equal(attr(&v, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, 0), CUDA_SUCCESS);
    assert_int_equal(v, 0);
    dlclose(h);
}

static void nvml_device_by_bus_id(void **state)
{
    (void)state;
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    assert_non_null(h);
    int (*init)(void) = (int (*)(void))dlsym(h, "nvmlInit_v2");
    int (*by_bus)(const char *, void **) =
        (int (*)(const char *, void **))dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
    assert_true(init && by_bus);
    void *dev = NULL;
    char bus[32];
    assert_int_equal(init(), 0);
    assert_int_equal(cudaDeviceGetPCIBusId(bus, sizeof bus, 0), cudaSuccess);
    assert_int_equal(by_bus(bus, &dev), 0);
    assert_non_null(dev);
    assert_int_equal(by_bus("not a bus id", &dev), 2); /* NVML_ERROR_INVALID_ARGUMENT */
    dlclose(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(priorities_and_streams),       cmocka_unit_test(capture_state),
        cmocka_unit_test(host_func_and_2d_copy),        cmocka_unit_test(driver_table_by_version),
        cmocka_unit_test(context_stack_and_attributes), cmocka_unit_test(nvml_device_by_bus_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
