/* graphcore as an engine's allocator: the exports plugged into two toy
 * allocator interfaces, as an engine or PyTorch plugs them in: one shaped
 * like PyTorch's CUDAPluggableAllocator (alloc(size, device, stream),
 * free(ptr, size, device, stream)) and one generic struct of function
 * pointers with a user pointer. Without a driver: every allocation is NULL
 * and gc_last_error() says GC_ERROR_NO_DRIVER; nothing crashes. With a GPU
 * (GC_GPU=1): blocks come from the pool set for the device, hold data,
 * go back to it, belong to a capture open into the pool on this thread,
 * and survive the pool being replaced or unset. */
#include <stdint.h>
#include <stdlib.h>
#include "check.h"

/* An engine's allocator interface: a user pointer and two functions. */
struct engine_allocator {
    void *user;
    void *(*alloc)(void *user, size_t size, int device, void *stream);
    void (*free)(void *user, void *ptr, size_t size, int device, void *stream);
};

/* PyTorch's pluggable allocator, as torch.cuda.memory.CUDAPluggableAllocator
 * loads it: two functions by name, no user pointer. */
struct torch_allocator {
    void *(*alloc)(size_t size, int device, void *stream);
    void (*free)(void *ptr, size_t size, int device, void *stream);
};

static const struct torch_allocator TORCH = {gc_torch_alloc, gc_torch_free};

#define MENTIONS(needle) (strstr(gc_last_error(), (needle)) != NULL)

static void no_driver(void) {
    check_case = "no driver";
    void *p = TORCH.alloc(1024, 0, NULL);
    CHECK(p == NULL);
    CHECK(MENTIONS("gc_torch_alloc") && MENTIONS("GC_ERROR_NO_DRIVER"));
    struct engine_allocator e = {NULL, gc_engine_alloc, gc_engine_free};
    p = e.alloc(e.user, 1024, 0, NULL);
    CHECK(p == NULL);
    CHECK(MENTIONS("gc_engine_alloc") && MENTIONS("GC_ERROR_NO_DRIVER"));
    /* A user pointer that is not a pool handle. */
    int word = 0;
    e.user = &word;
    CHECK(e.alloc(e.user, 1024, 0, NULL) == NULL);
    CHECK(MENTIONS("GC_ERROR_INVALID_HANDLE"));
    /* Frees of what was never handed out: an error, no crash. */
    e.free(e.user, &word, 4, 0, NULL);
    CHECK(MENTIONS("gc_engine_free"));
    TORCH.free(&word, 4, 0, NULL);
    CHECK(MENTIONS("gc_torch_free") && MENTIONS("GC_ERROR_INVALID_ARGUMENT"));
    TORCH.free(NULL, 0, 0, NULL); /* a no-op */
    /* Size 0: NULL without an error; a device out of range: an error. */
    CHECK(TORCH.alloc(0, 0, NULL) == NULL);
    CHECK(TORCH.alloc(16, -1, NULL) == NULL);
    CHECK(MENTIONS("GC_ERROR_INVALID_ARGUMENT") && MENTIONS("`device`"));
    EXPECT_OK(gc_allocator_set_pool(0, NULL));
    EXPECT_STATUS(gc_allocator_set_pool(-1, NULL), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_allocator_set_pool(GC_ALLOCATOR_MAX_DEVICES, NULL), GC_ERROR_INVALID_ARGUMENT);
}

static uint64_t allocated(gc_pool *p) {
    gc_pool_statistics st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    if (gc_pool_stats(p, &st) != GC_SUCCESS) return UINT64_MAX;
    return st.allocated_bytes;
}

static void gpu(void) {
    gc_context *ctx = NULL;
    gc_stream *s = NULL;
    gc_pool *pool = NULL, *other = NULL;
    EXPECT_OK(gc_context_create(0, &ctx));
    EXPECT_OK(gc_stream_create(ctx, &s));
    EXPECT_OK(gc_pool_create(ctx, NULL, &pool));
    EXPECT_OK(gc_pool_create(ctx, NULL, &other));
    void *raw = NULL;
    EXPECT_OK(gc_stream_raw(s, &raw));

    check_case = "no pool set";
    EXPECT_OK(gc_allocator_set_pool(0, NULL));
    CHECK(TORCH.alloc(1024, 0, raw) == NULL);
    CHECK(MENTIONS("GC_ERROR_INVALID_STATE") && MENTIONS("gc_allocator_set_pool"));
    CHECK(TORCH.alloc(1024, 4096, raw) == NULL);
    CHECK(MENTIONS("GC_ERROR_INVALID_ARGUMENT"));

    check_case = "blocks from the pool hold data and go back";
    EXPECT_OK(gc_allocator_set_pool(0, pool));
    float *a = TORCH.alloc(4096 * sizeof(float), 0, raw);
    float *b = TORCH.alloc(100, 0, raw);
    CHECK(a != NULL && b != NULL && ((uintptr_t)a % 256) == 0 && ((uintptr_t)b % 256) == 0);
    CHECK(allocated(pool) == 4096 * sizeof(float) + 256);
    float host[4096];
    if (a != NULL) {
        EXPECT_OK(gc_op_fill(s, a, 4096, 3.5f));
        EXPECT_OK(gc_memcpy_async(s, host, a, sizeof host));
        EXPECT_OK(gc_stream_synchronize(s));
        CHECK(host[0] == 3.5f && host[4095] == 3.5f);
    }
    TORCH.free(a, 4096 * sizeof(float), 0, raw);
    TORCH.free(b, 100, 0, raw);
    CHECK(allocated(pool) == 0);
    check_case = "a double free changes nothing";
    TORCH.free(b, 100, 0, raw);
    CHECK(MENTIONS("GC_ERROR_INVALID_ARGUMENT"));
    CHECK(allocated(pool) == 0);
    check_case = "past the device's memory";
    CHECK(TORCH.alloc((size_t)1 << 50, 0, raw) == NULL);
    CHECK(MENTIONS("GC_ERROR_OUT_OF_MEMORY"));

    check_case = "the generic pair with a pool as user pointer";
    struct engine_allocator e = {other, gc_engine_alloc, gc_engine_free};
    void *c = e.alloc(e.user, 512, 0, raw);
    CHECK(c != NULL && allocated(other) == 512 && allocated(pool) == 0);
    CHECK(e.alloc(e.user, 512, 1, raw) == NULL); /* another device than the pool's */
    CHECK(MENTIONS("`device`"));
    void *d = e.alloc(e.user, 512, -1, raw); /* -1: the pool's device */
    CHECK(d != NULL);
    e.free(e.user, c, 512, 0, raw);
    e.free(e.user, d, 512, -1, raw);
    CHECK(allocated(other) == 0);
    struct engine_allocator byDevice = {NULL, gc_engine_alloc, gc_engine_free};
    c = byDevice.alloc(NULL, 256, 0, raw);
    CHECK(c != NULL && allocated(pool) == 256);
    byDevice.free(NULL, c, 256, 0, raw);
    CHECK(allocated(pool) == 0);

    check_case = "an allocation during a capture into the pool belongs to it";
    gc_graph *g = NULL;
    EXPECT_OK(gc_capture_begin(s, pool, GC_CAPTURE_THREAD_LOCAL));
    float *tmp = TORCH.alloc(1024 * sizeof(float), 0, raw);
    float *out = TORCH.alloc(1024 * sizeof(float), 0, raw);
    CHECK(tmp != NULL && out != NULL);
    if (tmp != NULL && out != NULL) {
        EXPECT_OK(gc_op_fill(s, tmp, 1024, 2.0f));
        EXPECT_OK(gc_op_copy(s, out, tmp, 1024));
    }
    TORCH.free(tmp, 1024 * sizeof(float), 0, raw);
    EXPECT_OK(gc_capture_end(s, &g));
    uint64_t held = 0;
    EXPECT_OK(gc_graph_pool_bytes(g, &held));
    CHECK(held == 1024 * sizeof(float)); /* `out`, kept at the end */
    gc_exec *x = NULL;
    EXPECT_OK(gc_graph_instantiate(g, GC_INSTANTIATE_UPLOAD, &x));
    EXPECT_OK(gc_exec_launch(x, s));
    if (out != NULL) {
        EXPECT_OK(gc_memcpy_async(s, host, out, 1024 * sizeof(float)));
        EXPECT_OK(gc_stream_synchronize(s));
        CHECK(host[0] == 2.0f && host[1023] == 2.0f);
    }
    EXPECT_OK(gc_exec_destroy(x));
    EXPECT_OK(gc_graph_destroy(g));

    check_case = "a block outlives its pool being replaced, then unset";
    float *kept = TORCH.alloc(256, 0, raw);
    CHECK(kept != NULL);
    EXPECT_OK(gc_allocator_set_pool(0, other));
    void *fresh = TORCH.alloc(256, 0, raw);
    CHECK(fresh != NULL && allocated(other) == 256);
    TORCH.free(kept, 256, 0, raw); /* goes back to `pool` */
    TORCH.free(out, 1024 * sizeof(float), 0, raw);
    CHECK(allocated(pool) == 0);
    EXPECT_OK(gc_allocator_set_pool(0, NULL));
    CHECK(TORCH.alloc(256, 0, raw) == NULL);
    TORCH.free(fresh, 256, 0, raw); /* `other`, unset but still live */
    CHECK(allocated(other) == 0);

    check_case = "the pool handle may go while set";
    EXPECT_OK(gc_allocator_set_pool(0, other));
    EXPECT_OK(gc_pool_destroy(other));
    void *late = TORCH.alloc(256, 0, raw);
    CHECK(late != NULL);
    TORCH.free(late, 256, 0, raw);
    EXPECT_OK(gc_allocator_set_pool(0, NULL)); /* releases `other` */

    EXPECT_OK(gc_pool_destroy(pool));
    EXPECT_OK(gc_stream_destroy(s));
    EXPECT_OK(gc_context_destroy(ctx));
}

int main(void) {
    int n = 0;
    gc_status st = gc_device_count(&n);
    const char *want_gpu = getenv("GC_GPU");
    if (st == GC_SUCCESS && n > 0) {
        gpu();
    } else if (want_gpu != NULL && strcmp(want_gpu, "0") != 0) {
        fprintf(stderr, "GC_GPU is set but there is no usable GPU: %s\n", gc_last_error());
        return 2;
    } else {
        no_driver();
    }
    return check_summary("allocator");
}
