// What the GEMM harnesses share (harness.cu, splitk.cu): the float64
// reference, the relative-error reduction and the graph-replay timers
// (time_fn: in a graph of many calls; time_replay: a one-call graph
// replayed back to back).
// Included after CK and the CUDA headers.
// float64 reference and |x| |W| sums, 16 x 16 tiles.
__global__ void ref64(double *c, double *ac, const float *a, const float *b, const float *bias, int m, int n, int k) {
    __shared__ double as[16][17], bs[16][17];
    int tx = threadIdx.x, ty = threadIdx.y, i = blockIdx.y * 16 + ty, j = blockIdx.x * 16 + tx;
    double s = 0, sa = 0;
    for (int r0 = 0; r0 < k; r0 += 16) {
        as[ty][tx] = (i < m && r0 + tx < k) ? a[(size_t)i * k + r0 + tx] : 0.0;
        int jj = blockIdx.x * 16 + ty;
        bs[ty][tx] = (jj < n && r0 + tx < k) ? b[(size_t)jj * k + r0 + tx] : 0.0;
        __syncthreads();
        for (int q = 0; q < 16; q++) { double p = as[ty][q] * bs[tx][q]; s += p; sa += fabs(p); }
        __syncthreads();
    }
    if (i < m && j < n) { c[(size_t)i * n + j] = s + bias[j]; ac[(size_t)i * n + j] = sa + fabs((double)bias[j]) + 1e-30; }
}
__device__ unsigned long long g_err;
__global__ void relerr(const float *c, const double *r, const double *ac, size_t n) {
    double e = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double d = fabs((double)c[i] - r[i]) / ac[i];
        if (!(d <= 1e30)) d = 1e30;
        e = fmax(e, d);
    }
    atomicMax(&g_err, (unsigned long long)__double_as_longlong(e));
}

static cudaStream_t st;
static double time_fn(const std::function<void()> &body) {
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    body(); CK(cudaStreamSynchronize(st));
    cudaEventRecord(a, st); body(); cudaEventRecord(b, st); CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b);
    double est = std::max(ms * 1000.0, 1.0);
    int per = (int)std::min(20.0, std::max(1.0, 1000.0 / est));
    int reps = (int)std::min(50.0, std::max(1.0, 5000.0 / (est * per)));
    cudaGraph_t g; cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < per; i++) body();
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, st));
    std::vector<float> t;
    for (int r = 0; r < 5; r++) {
        cudaEventRecord(a, st);
        for (int i = 0; i < reps; i++) CK(cudaGraphLaunch(ge, st));
        cudaEventRecord(b, st);
        CK(cudaEventSynchronize(b));
        cudaEventElapsedTime(&ms, a, b); t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
    cudaEventDestroy(a); cudaEventDestroy(b);
    return t[2] * 1000.0 / (reps * per);
}

// GPU time per call of `body` replayed alone as a one-call graph, back to
// back (median of 5 rounds of 1000).
static double time_replay(const std::function<void()> &body) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    body();
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int i = 0; i < 50; i++) CK(cudaGraphLaunch(ge, st));
    std::vector<float> t;
    for (int r = 0; r < 5; r++) {
        cudaEventRecord(a, st);
        for (int i = 0; i < 1000; i++) CK(cudaGraphLaunch(ge, st));
        cudaEventRecord(b, st);
        CK(cudaEventSynchronize(b));
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return t[2];  // ms per 1000 = us per replay
}
