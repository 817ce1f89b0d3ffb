/* C ABI checks: status names, versions, NULL arguments, handle checks and,
 * where a driver is present, bad sizes, launch limits and misuse. Without a
 * driver every call that needs one must return GC_ERROR_NO_DRIVER (never
 * crash); argument checks come first either way. */
#include <stdint.h>
#include <stdlib.h>
#include "check.h"

/* A handle value that was never issued (kind byte 0x7f). */
#define BOGUS(type) ((type *)(uintptr_t)0x7f00000100000001ull)

static void statuses_and_versions(void) {
    CHECK(strcmp(gc_status_name(GC_SUCCESS), "GC_SUCCESS") == 0);
    CHECK(strcmp(gc_status_name(GC_ERROR_PANIC), "GC_ERROR_PANIC") == 0);
    CHECK(strcmp(gc_status_name(GC_ERROR_NO_DRIVER), "GC_ERROR_NO_DRIVER") == 0);
    CHECK(strcmp(gc_status_name(-1), "GC_UNKNOWN_STATUS") == 0);
    CHECK(strcmp(gc_status_name(1000), "GC_UNKNOWN_STATUS") == 0);
    CHECK(gc_version() == GC_VERSION_MAJOR * 10000u + GC_VERSION_MINOR * 100u + GC_VERSION_PATCH);
    CHECK(gc_last_error() != NULL);
}

/* Calls whose arguments are wrong whether or not there is a driver. */
static void null_arguments(void) {
    EXPECT_STATUS(gc_device_count(NULL), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_ERROR_MENTIONS("gc_device_count");
    EXPECT_ERROR_MENTIONS("count");
    EXPECT_STATUS(gc_context_create(0, NULL), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_context_synchronize(NULL), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_context_info(NULL, NULL), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_stream_create(NULL, NULL), GC_ERROR_INVALID_ARGUMENT);
    gc_stream *s = NULL;
    EXPECT_STATUS(gc_stream_create(NULL, &s), GC_ERROR_INVALID_ARGUMENT);
    CHECK(s == NULL); /* out-parameters are written only on success */
    EXPECT_STATUS(gc_stream_wrap(NULL, NULL, &s), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_stream_raw(NULL, NULL), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_stream_wait_stream(NULL, NULL), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_stream_synchronize(NULL), GC_ERROR_INVALID_ARGUMENT);
    int capturing = 7;
    EXPECT_STATUS(gc_stream_is_capturing(NULL, &capturing), GC_ERROR_INVALID_ARGUMENT);
    CHECK(capturing == 7);
    void *p = NULL;
    EXPECT_STATUS(gc_host_alloc(NULL, 16, &p), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_host_free(NULL, p), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_memcpy_async(NULL, p, p, 4), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_memset_async(NULL, p, 0, 4), GC_ERROR_INVALID_ARGUMENT);
    gc_module *m = NULL;
    EXPECT_STATUS(gc_module_load(NULL, "x", 1, &m), GC_ERROR_INVALID_ARGUMENT);
    gc_function *f = NULL;
    EXPECT_STATUS(gc_module_function(NULL, "k", &f), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_function_wrap(NULL, NULL, NULL, &f), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_kernel_builtin(NULL, "gc_fill_f32", &f), GC_ERROR_INVALID_ARGUMENT);
    gc_dim3 one = {1, 1, 1};
    EXPECT_STATUS(gc_launch(NULL, NULL, one, one, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    gc_pool *pool = NULL;
    EXPECT_STATUS(gc_pool_create(NULL, NULL, &pool), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_pool_alloc(NULL, 256, &p), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_pool_free(NULL, p), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_pool_trim(NULL), GC_ERROR_INVALID_ARGUMENT);
    gc_pool_statistics st;
    st.struct_size = sizeof st;
    EXPECT_STATUS(gc_pool_stats(NULL, &st), GC_ERROR_INVALID_ARGUMENT);
    /* Destroying NULL is a no-op. */
    EXPECT_OK(gc_context_destroy(NULL));
    EXPECT_OK(gc_stream_destroy(NULL));
    EXPECT_OK(gc_module_destroy(NULL));
    EXPECT_OK(gc_function_destroy(NULL));
    EXPECT_OK(gc_pool_destroy(NULL));
}

/* Never-issued handles are GC_ERROR_INVALID_HANDLE, never a crash. */
static void bogus_handles(void) {
    EXPECT_STATUS(gc_context_synchronize(BOGUS(gc_context)), GC_ERROR_INVALID_HANDLE);
    EXPECT_ERROR_MENTIONS("not a gc_context handle");
    EXPECT_STATUS(gc_context_destroy(BOGUS(gc_context)), GC_ERROR_INVALID_HANDLE);
    EXPECT_STATUS(gc_stream_synchronize(BOGUS(gc_stream)), GC_ERROR_INVALID_HANDLE);
    EXPECT_STATUS(gc_stream_destroy(BOGUS(gc_stream)), GC_ERROR_INVALID_HANDLE);
    EXPECT_STATUS(gc_pool_trim(BOGUS(gc_pool)), GC_ERROR_INVALID_HANDLE);
    EXPECT_STATUS(gc_pool_destroy(BOGUS(gc_pool)), GC_ERROR_INVALID_HANDLE);
    EXPECT_STATUS(gc_module_destroy(BOGUS(gc_module)), GC_ERROR_INVALID_HANDLE);
    EXPECT_STATUS(gc_function_destroy(BOGUS(gc_function)), GC_ERROR_INVALID_HANDLE);
}

static void without_driver(void) {
    int n = -1;
    EXPECT_STATUS(gc_device_count(&n), GC_ERROR_NO_DRIVER);
    CHECK(n == -1);
    EXPECT_ERROR_MENTIONS("no CUDA driver");
    gc_context *ctx = NULL;
    EXPECT_STATUS(gc_context_create(0, &ctx), GC_ERROR_NO_DRIVER);
    CHECK(ctx == NULL);
    CHECK(gc_last_cuda_result() == 0);
}

static const char *GOOD_PTX =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry noop()\n{\n ret;\n}\n";

static void with_driver(void) {
    int n = 0;
    EXPECT_OK(gc_device_count(&n));
    CHECK(n >= 1);
    gc_context *ctx = NULL;
    EXPECT_STATUS(gc_context_create(n, &ctx), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_context_create(-1, &ctx), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_OK(gc_context_create(0, &ctx));
    gc_device_info info;
    memset(&info, 0, sizeof info);
    EXPECT_STATUS(gc_context_info(ctx, &info), GC_ERROR_INVALID_ARGUMENT); /* struct_size 0 */
    info.struct_size = sizeof info;
    EXPECT_OK(gc_context_info(ctx, &info));
    CHECK(info.sm_count > 0 && info.total_bytes > 0 && info.name[0] != 0);
    CHECK(info.driver_version >= 12000);

    gc_stream *s = NULL;
    EXPECT_OK(gc_stream_create(ctx, &s));
    /* A handle of the wrong kind. */
    EXPECT_STATUS(gc_context_synchronize((gc_context *)s), GC_ERROR_INVALID_HANDLE);
    EXPECT_ERROR_MENTIONS("gc_stream");

    /* Host memory. */
    void *h = NULL;
    EXPECT_STATUS(gc_host_alloc(ctx, 0, &h), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_OK(gc_host_alloc(ctx, 4096, &h));
    int local = 0;
    EXPECT_STATUS(gc_host_free(ctx, &local), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_OK(gc_host_free(ctx, h));
    EXPECT_STATUS(gc_host_free(ctx, h), GC_ERROR_INVALID_ARGUMENT); /* twice */

    /* Modules: malformed PTX carries the JIT log; unknown names. */
    gc_module *m = NULL;
    const char *bad = ".version 7.0\n.target sm_75\n.address_size 64\n.visible .entry k( {\n";
    EXPECT_STATUS(gc_module_load(ctx, bad, strlen(bad), &m), GC_ERROR_CUDA);
    EXPECT_ERROR_MENTIONS("JIT log");
    CHECK(gc_last_cuda_result() != 0);
    CHECK(m == NULL);
    EXPECT_STATUS(gc_module_load(ctx, GOOD_PTX, 0, &m), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_OK(gc_module_load(ctx, GOOD_PTX, strlen(GOOD_PTX), &m));
    gc_function *f = NULL;
    EXPECT_STATUS(gc_module_function(m, "missing", &f), GC_ERROR_NOT_FOUND);
    EXPECT_OK(gc_module_function(m, "noop", &f));
    EXPECT_STATUS(gc_kernel_builtin(ctx, "no_such_kernel", &f), GC_ERROR_NOT_FOUND);

    /* Launch limits: nothing is launched. */
    gc_dim3 zero = {0, 1, 1}, one = {1, 1, 1}, big = {2048, 1, 1};
    EXPECT_STATUS(gc_launch(f, s, zero, one, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_launch(f, s, one, big, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_OK(gc_launch(f, s, one, one, 0, NULL));
    EXPECT_OK(gc_stream_synchronize(s));

    /* Destroyed handles. */
    gc_function *g = f;
    EXPECT_OK(gc_function_destroy(f));
    EXPECT_STATUS(gc_launch(g, s, one, one, 0, NULL), GC_ERROR_INVALID_HANDLE);
    EXPECT_ERROR_MENTIONS("destroyed");
    EXPECT_OK(gc_module_destroy(m));

    /* Pools: sizes, foreign and double frees; the pool still works. */
    gc_pool *pool = NULL;
    gc_pool_options opt;
    memset(&opt, 0, sizeof opt);
    opt.struct_size = sizeof opt;
    opt.initial_bytes = 8u << 20;
    opt.max_bytes = 4u << 20;
    EXPECT_STATUS(gc_pool_create(ctx, &opt, &pool), GC_ERROR_INVALID_ARGUMENT);
    opt.max_bytes = 64u << 20;
    EXPECT_OK(gc_pool_create(ctx, &opt, &pool));
    void *a = NULL;
    EXPECT_STATUS(gc_pool_alloc(pool, 0, &a), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_pool_alloc(pool, (size_t)1 << 40, &a), GC_ERROR_OUT_OF_MEMORY);
    EXPECT_OK(gc_pool_alloc(pool, 1000, &a));
    CHECK(((uintptr_t)a % 256) == 0);
    EXPECT_STATUS(gc_pool_free(pool, (char *)a + 256), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_OK(gc_pool_free(pool, a));
    EXPECT_STATUS(gc_pool_free(pool, a), GC_ERROR_INVALID_ARGUMENT);
    gc_pool_statistics st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    EXPECT_OK(gc_pool_stats(pool, &st));
    CHECK(st.allocated_bytes == 0 && st.reserved_bytes >= (8u << 20));
    CHECK(st.alloc_count == 1 && st.free_count == 1);
    EXPECT_OK(gc_pool_alloc(pool, 1000, &a));
    EXPECT_OK(gc_memset_async(s, a, 0, 1000));
    EXPECT_OK(gc_stream_synchronize(s));
    EXPECT_OK(gc_pool_free(pool, a));
    EXPECT_OK(gc_pool_trim(pool));
    EXPECT_OK(gc_pool_destroy(pool));
    EXPECT_STATUS(gc_pool_trim(pool), GC_ERROR_INVALID_HANDLE);

    EXPECT_OK(gc_stream_destroy(s));
    EXPECT_STATUS(gc_stream_synchronize(s), GC_ERROR_INVALID_HANDLE);
    EXPECT_OK(gc_context_destroy(ctx));
    EXPECT_STATUS(gc_context_destroy(ctx), GC_ERROR_INVALID_HANDLE);
}

int main(void) {
    statuses_and_versions();
    null_arguments();
    bogus_handles();
    int n = 0;
    if (gc_device_count(&n) == GC_ERROR_NO_DRIVER) {
        printf("abi: no CUDA driver here: checking the no-driver path\n");
        without_driver();
    } else {
        printf("abi: CUDA driver present: checking argument and state errors on the GPU\n");
        with_driver();
    }
    return check_summary("abi");
}
